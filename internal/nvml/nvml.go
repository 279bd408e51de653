// Package nvml is what tfk8s's static binaries know of NVIDIA GPUs: the devices and
// readings that the tfk8s-nvml command prints, and how to run it. The command alone
// loads NVML (package dlopen): loading a library would make a binary dynamically
// linked, and the agent runs in images that may have no C library.
package nvml

// Library is the file name the NVIDIA driver installs NVML under, found by the
// dynamic loader's search path.
const Library = "libnvidia-ml.so.1"

// Device is what tfk8s knows of one GPU.
type Device struct {
	// Index is NVML's, 0 to Count-1 in what this process sees.
	Index int `json:"index"`
	// Minor is the N of /dev/nvidiaN.
	Minor int    `json:"minor"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
}

// Reading is one GPU's use at one moment.
type Reading struct {
	Index int `json:"index"`
	// UtilizationPercent is the share of NVML's last sample period in which a
	// kernel ran on the GPU.
	UtilizationPercent int   `json:"utilizationPercent"`
	MemoryUsedBytes    int64 `json:"memoryUsedBytes"`
	MemoryTotalBytes   int64 `json:"memoryTotalBytes"`
}

// Sample is one line of tfk8s-nvml sample: every GPU the process sees, read or not.
type Sample struct {
	GPUs []Reading `json:"gpus"`
	// Unreadable are the GPUs NVML would not read: a MIG-enabled GPU has no
	// utilisation, and a GPU may be lost while the job runs.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Unreadable is a GPU NVML would not read, and why.
type Unreadable struct {
	Index int    `json:"index"`
	Error string `json:"error"`
}

// Command is the tfk8s-nvml command's file name, beside the binaries that run it.
const Command = "tfk8s-nvml"

// tfk8s-nvml's exit codes where there is no GPU to read, which is no fault: a
// machine or container without NVIDIA's driver, or whose NVML sees no GPU.
const (
	// ExitNoLibrary is where libnvidia-ml.so.1 cannot be loaded: the common case of
	// a container without GPUs, said nowhere.
	ExitNoLibrary = 3
	// ExitNoGPU is where NVML loads and will not start or sees no GPU.
	ExitNoGPU = 4
)
