/* A stand-in for libnvidia-ml.so.1 with NVML's C interface: the functions the
 * tfk8s-nvml command calls, their signatures and result codes as nvml.h declares
 * them. Macros set at compile time (cc -D) choose what it answers, one build per case:
 *   FAKE_INIT       the code nvmlInit_v2 returns (NVML_SUCCESS if undefined)
 *   FAKE_COUNT      how many devices it has, at most 8 (2 if undefined)
 *   FAKE_UTIL_FAIL  the code nvmlDeviceGetUtilizationRates returns, if defined
 *   FAKE_UTIL_FAIL_INDEX  the one device FAKE_UTIL_FAIL applies to (every one if
 *                   undefined), as a MIG-enabled GPU among others answers
 */
#include <stdio.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlUtilization_st { unsigned int gpu; unsigned int memory; } nvmlUtilization_t;
typedef struct nvmlMemory_st { unsigned long long total; unsigned long long free; unsigned long long used; } nvmlMemory_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvmlDevice_st { unsigned int index; };
static struct nvmlDevice_st devices[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static int initialised;

#ifndef FAKE_INIT
#define FAKE_INIT NVML_SUCCESS
#endif
#ifndef FAKE_COUNT
#define FAKE_COUNT 2
#endif

nvmlReturn_t nvmlInit_v2(void) {
	int r = FAKE_INIT;
	initialised = r == NVML_SUCCESS;
	return r;
}

nvmlReturn_t nvmlShutdown(void) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	initialised = 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
	*deviceCount = FAKE_COUNT;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= FAKE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

/* Device i is 40 + 7i percent busy and uses (i+1) GiB of 16 GiB. */
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || !utilization) return NVML_ERROR_INVALID_ARGUMENT;
#ifdef FAKE_UTIL_FAIL
#ifdef FAKE_UTIL_FAIL_INDEX
	if (device->index == FAKE_UTIL_FAIL_INDEX)
#endif
		return FAKE_UTIL_FAIL;
#endif
	utilization->gpu = 40 + 7 * device->index;
	utilization->memory = 10;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || !memory) return NVML_ERROR_INVALID_ARGUMENT;
	memory->total = 16ULL << 30;
	memory->used = (unsigned long long)(device->index + 1) << 30;
	memory->free = memory->total - memory->used;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || !name) return NVML_ERROR_INVALID_ARGUMENT;
	if (snprintf(name, length, "Fake GPU %u", device->index) >= (int)length) return NVML_ERROR_INSUFFICIENT_SIZE;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || !uuid) return NVML_ERROR_INVALID_ARGUMENT;
	if (snprintf(uuid, length, "GPU-00000000-0000-0000-0000-00000000000%u", device->index) >= (int)length) return NVML_ERROR_INSUFFICIENT_SIZE;
	return NVML_SUCCESS;
}

/* Device i is /dev/nvidia(i+2): minor numbers need not follow NVML's indices. */
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
	if (!initialised) return NVML_ERROR_UNINITIALIZED;
	if (!device || !minorNumber) return NVML_ERROR_INVALID_ARGUMENT;
	*minorNumber = device->index + 2;
	return NVML_SUCCESS;
}
