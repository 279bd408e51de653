package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// gpuAllocator gives pods distinct GPU indices out of the node's GPUs.
type gpuAllocator struct {
	mu    sync.Mutex
	owner []string // pod UID per GPU index; "" is free
}

func newGPUAllocator(n int) *gpuAllocator { return &gpuAllocator{owner: make([]string, n)} }

// allocate reserves count GPUs for pod uid, the lowest free indices, or returns those it
// already holds.
func (g *gpuAllocator) allocate(uid string, count int) ([]int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var held, free []int
	for i, o := range g.owner {
		switch o {
		case uid:
			held = append(held, i)
		case "":
			free = append(free, i)
		}
	}
	if len(held) > 0 || count == 0 {
		return held, nil
	}
	if len(free) < count {
		return nil, fmt.Errorf("pod needs %d %s, %d of %d free", count, GPUResource, len(free), len(g.owner))
	}
	for _, i := range free[:count] {
		g.owner[i] = uid
	}
	return free[:count], nil
}

// release frees the GPUs of pod uid.
func (g *gpuAllocator) release(uid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.owner {
		if o == uid {
			g.owner[i] = ""
		}
	}
}

// containerGPUCount is a container's nvidia.com/gpu limit (extended resources have
// requests equal to limits).
func containerGPUCount(c *corev1.Container) int {
	q, ok := c.Resources.Limits[GPUResource]
	if !ok {
		q = c.Resources.Requests[GPUResource]
	}
	return int(q.Value())
}

// podGPUCount is how many GPUs a pod holds: the sum over its containers, or the most
// any one init container wants, whichever is larger (init containers run before the
// others and may reuse their devices).
func podGPUCount(pod *corev1.Pod) int {
	sum, initMax := 0, 0
	for i := range pod.Spec.Containers {
		sum += containerGPUCount(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		initMax = max(initMax, containerGPUCount(&pod.Spec.InitContainers[i]))
	}
	return max(sum, initMax)
}

// containerGPUs splits a pod's GPU indices among its containers: disjoint slices for
// the containers, in order, and the first ones for each init container.
func containerGPUs(pod *corev1.Pod, indices []int) map[string][]int {
	out := map[string][]int{}
	next := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if n := containerGPUCount(c); n > 0 && next+n <= len(indices) {
			out[c.Name] = indices[next : next+n]
			next += n
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if n := containerGPUCount(c); n > 0 && n <= len(indices) {
			out[c.Name] = indices[:n]
		}
	}
	return out
}

// gpuEnv names a container's GPUs the ways CUDA and the NVIDIA container tools read
// them, host indices in PCI bus order (nvidia-smi's numbering).
func gpuEnv(indices []int) []corev1.EnvVar {
	if len(indices) == 0 {
		return nil
	}
	s := make([]string, len(indices))
	for i, idx := range indices {
		s[i] = strconv.Itoa(idx)
	}
	list := strings.Join(s, ",")
	return []corev1.EnvVar{
		{Name: "NVIDIA_VISIBLE_DEVICES", Value: list},
		{Name: "CUDA_VISIBLE_DEVICES", Value: list},
		{Name: "CUDA_DEVICE_ORDER", Value: "PCI_BUS_ID"},
	}
}

// hostGPUDevices lists the host's NVIDIA device nodes. A container that uses GPUs gets
// them all, so that host indices keep their meaning; CUDA_VISIBLE_DEVICES confines it to
// its own.
func hostGPUDevices() []specs.LinuxDevice {
	paths, _ := filepath.Glob("/dev/nvidia*")
	var devs []specs.LinuxDevice
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		mode := fi.Mode().Perm()
		devs = append(devs, specs.LinuxDevice{
			Path: p, Type: "c", Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev))),
			FileMode: &mode,
		})
	}
	return devs
}
