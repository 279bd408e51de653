package main

import (
	"fmt"
	"runtime/debug"
	"strconv"
)

// envMemoryLimit is the controller container's memory limit in bytes, which the chart
// and config/manager pass from the pod's resources.
const envMemoryLimit = "TFK8S_MEMORY_LIMIT"

// goHeapShare is the share of the container's memory limit the Go runtime may hold
// before it collects garbage harder. The rest is for what the runtime does not count
// and the kernel does: the binary's pages (some 27 MB resident) and memory on its way
// back to the kernel. With the whole limit as the runtime's, the container could be
// killed before the runtime felt any pressure.
const goHeapShare = 0.7

// setMemoryLimit sets the Go runtime's soft memory limit to goHeapShare of the
// container's limit, unless GOMEMLIMIT already sets one. It returns the limit set, 0
// for none.
func setMemoryLimit(getenv func(string) string) (int64, error) {
	raw := getenv(envMemoryLimit)
	if raw == "" || getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || limit <= 0 {
		return 0, fmt.Errorf("%s=%q is not a memory size in bytes", envMemoryLimit, raw)
	}
	heap := int64(float64(limit) * goHeapShare)
	debug.SetMemoryLimit(heap)
	return heap, nil
}
