/* A library with NVML's nvmlInit_v2 and nothing else: an NVML too old or not NVML. */
int nvmlInit_v2(void) { return 0; }
