package gpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tfk8s/tfk8s/internal/nvml"
)

// Device is one of the host's real GPUs, as NVML enumerates it: a node advertises it
// by its UUID and gives a container its /dev/nvidia<Minor>.
type Device struct {
	UUID  string `json:"uuid"`
	Minor int    `json:"minor"`
	Name  string `json:"name,omitempty"`
}

// RealDevices enumerates the host's GPUs through tfk8s-nvml (cmd), which loads the
// driver's NVML: the same reader the agent uses in each container.
func RealDevices(ctx context.Context, cmd string) ([]Device, error) {
	found, err := nvml.Devices(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("enumerating the host's GPUs: %w", err)
	}
	out := make([]Device, len(found))
	for i, d := range found {
		out[i] = Device{UUID: d.UUID, Minor: d.Minor, Name: d.Name}
	}
	return out, nil
}

// advertised is one device the plugin lists: its ID, the device node a container
// gets for it, and how CUDA and NVIDIA's tools name it in the container.
type advertised struct {
	id, node, visible string
}

// fakeDevices are count fake GPUs, numbered as nvidia-smi numbers real ones.
func fakeDevices(count int) []advertised {
	out := make([]advertised, count)
	for i := range out {
		id := strconv.Itoa(i)
		out[i] = advertised{id: id, node: "nvidia" + id, visible: id}
	}
	return out
}

// realDevices are the host's GPUs, known by their UUIDs: CUDA_VISIBLE_DEVICES takes
// them too, and they name the same GPU whatever the order in the container.
func realDevices(devs []Device) []advertised {
	out := make([]advertised, len(devs))
	for i, d := range devs {
		out[i] = advertised{id: d.UUID, node: "nvidia" + strconv.Itoa(d.Minor), visible: d.UUID}
	}
	return out
}

// DriverLibDir is where a container with real GPUs finds the host's driver
// libraries, on its LD_LIBRARY_PATH: NVIDIA's images look there too.
const DriverLibDir = "/usr/local/nvidia/lib64"

// driverLibs are the driver's user-space libraries a CUDA program and NVML load; the
// container's image has the CUDA toolkit, never these, which must match the kernel
// module.
var driverLibs = []string{"libcuda.so.1", "libnvidia-ml.so.1", "libnvidia-ptxjitcompiler.so.1", "libnvidia-nvvm.so.4"}

// hostLibDirs are where distributions install the driver's libraries.
var hostLibDirs = []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64"}

// driverMounts mounts each driver library found in libDirs, read-only, under
// DriverLibDir by its soname.
func driverMounts(libDirs []string) []*v1beta1.Mount {
	var mounts []*v1beta1.Mount
	for _, lib := range driverLibs {
		for _, dir := range libDirs {
			host, err := filepath.EvalSymlinks(filepath.Join(dir, lib))
			if err != nil {
				continue
			}
			if st, err := os.Stat(host); err != nil || !st.Mode().IsRegular() {
				continue
			}
			mounts = append(mounts, &v1beta1.Mount{ContainerPath: DriverLibDir + "/" + lib, HostPath: host, ReadOnly: true})
			break
		}
	}
	return mounts
}
