package gpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// controlNodes are the device nodes every CUDA process opens besides its GPUs'; a
// container with any GPU gets those the host has.
var controlNodes = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}

// service answers the kubelet's DevicePlugin calls for its devices, fake or real.
type service struct {
	v1beta1.UnimplementedDevicePluginServer
	devices []advertised
	devDir  string // where the host's device nodes are
	// libDirs are where the host's driver libraries are, for real GPUs; none for
	// fake ones, whose containers get no library.
	libDirs []string
	log     logr.Logger
}

// pluginOptions are the plugin's options, sent when registering and when asked: no
// call before a container starts, no preferred allocation, since the fake GPUs are alike.
func pluginOptions() *v1beta1.DevicePluginOptions { return &v1beta1.DevicePluginOptions{} }

// GetDevicePluginOptions answers the options the plugin registered with.
func (s *service) GetDevicePluginOptions(context.Context, *v1beta1.Empty) (*v1beta1.DevicePluginOptions, error) {
	return pluginOptions(), nil
}

// ListAndWatch sends the devices once and holds the stream, since they never change;
// the stream ends when the kubelet hangs up or the plugin's server stops.
func (s *service) ListAndWatch(_ *v1beta1.Empty, stream v1beta1.DevicePlugin_ListAndWatchServer) error {
	devs := make([]*v1beta1.Device, len(s.devices))
	for i, d := range s.devices {
		devs[i] = &v1beta1.Device{ID: d.id, Health: v1beta1.Healthy}
	}
	if err := stream.Send(&v1beta1.ListAndWatchResponse{Devices: devs}); err != nil {
		return fmt.Errorf("sending the device list: %w", err)
	}
	<-stream.Context().Done()
	return nil
}

// GetPreferredAllocation prefers the devices the kubelet must include, then the
// available ones in its order; the kubelet does not ask, as the options say.
func (s *service) GetPreferredAllocation(_ context.Context, req *v1beta1.PreferredAllocationRequest) (*v1beta1.PreferredAllocationResponse, error) {
	resp := &v1beta1.PreferredAllocationResponse{}
	for _, c := range req.ContainerRequests {
		ids := slices.Clone(c.MustIncludeDeviceIDs)
		for _, id := range c.AvailableDeviceIDs {
			if len(ids) < int(c.AllocationSize) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &v1beta1.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// Allocate tells the kubelet what each container gets for its GPUs: their indices in
// the environment and the device nodes of those GPUs alone.
func (s *service) Allocate(_ context.Context, req *v1beta1.AllocateRequest) (*v1beta1.AllocateResponse, error) {
	resp := &v1beta1.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		devs, err := s.lookUp(c.DevicesIds)
		if err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, containerAllocation(s.devDir, s.libDirs, devs))
		s.log.V(2).Info("Allocated GPUs", "devices", c.DevicesIds)
	}
	return resp, nil
}

// PreStartContainer has nothing to do; the kubelet does not call it, as the options say.
func (s *service) PreStartContainer(context.Context, *v1beta1.PreStartContainerRequest) (*v1beta1.PreStartContainerResponse, error) {
	return &v1beta1.PreStartContainerResponse{}, nil
}

// lookUp returns the devices of ids, refusing an ID the plugin did not advertise,
// naming it.
func (s *service) lookUp(ids []string) ([]advertised, error) {
	out := make([]advertised, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(s.devices, func(d advertised) bool { return d.id == id })
		if i < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "unknown device %q: this node has %s", id, s.listed())
		}
		out = append(out, s.devices[i])
	}
	return out, nil
}

// listed names the devices for an error: "GPUs 0 to 3", or their IDs.
func (s *service) listed() string {
	if len(s.devices) == 0 {
		return "no GPU"
	}
	if s.libDirs == nil {
		return fmt.Sprintf("GPUs 0 to %d", len(s.devices)-1)
	}
	ids := make([]string, len(s.devices))
	for i, d := range s.devices {
		ids[i] = d.id
	}
	return "GPUs " + strings.Join(ids, ", ")
}

// containerAllocation is one container's share: its GPUs' names, in the order given,
// in NVIDIA's and CUDA's variables, and the device nodes under devDir of those GPUs and
// of the driver's control, those that exist. CUDA counts in PCI bus order, as the
// indices do (nvidia-smi's numbering), rather than fastest first. Real GPUs also get
// the host's driver libraries from libDirs, on the library path.
func containerAllocation(devDir string, libDirs []string, devs []advertised) *v1beta1.ContainerAllocateResponse {
	visible := make([]string, len(devs))
	nodes := make([]string, 0, len(devs)+len(controlNodes))
	for i, d := range devs {
		visible[i] = d.visible
		nodes = append(nodes, d.node)
	}
	list := strings.Join(visible, ",")
	resp := &v1beta1.ContainerAllocateResponse{Envs: map[string]string{
		"NVIDIA_VISIBLE_DEVICES": list,
		"CUDA_VISIBLE_DEVICES":   list,
		"CUDA_DEVICE_ORDER":      "PCI_BUS_ID",
	}}
	if libDirs != nil {
		resp.Mounts = driverMounts(libDirs)
		resp.Envs["LD_LIBRARY_PATH"] = DriverLibDir
	}
	for _, name := range append(nodes, controlNodes...) {
		host := filepath.Join(devDir, name)
		if _, err := os.Stat(host); err == nil {
			resp.Devices = append(resp.Devices, &v1beta1.DeviceSpec{
				ContainerPath: "/dev/" + name, HostPath: host, Permissions: "rw",
			})
		}
	}
	return resp
}
