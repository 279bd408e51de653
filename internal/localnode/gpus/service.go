package gpus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// controlNodes are the device nodes every CUDA process opens besides its GPUs'; a
// container with any GPU gets those the host has.
var controlNodes = []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}

// service answers the kubelet's DevicePlugin calls for count fake GPUs.
type service struct {
	v1beta1.UnimplementedDevicePluginServer
	count  int
	devDir string // where the host's device nodes are
	log    logr.Logger
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
	devs := make([]*v1beta1.Device, s.count)
	for i := range devs {
		devs[i] = &v1beta1.Device{ID: strconv.Itoa(i), Health: v1beta1.Healthy}
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
		if err := s.checkIDs(c.DevicesIds); err != nil {
			return nil, err
		}
		resp.ContainerResponses = append(resp.ContainerResponses, containerAllocation(s.devDir, c.DevicesIds))
		s.log.V(2).Info("Allocated GPUs", "devices", c.DevicesIds)
	}
	return resp, nil
}

// PreStartContainer has nothing to do; the kubelet does not call it, as the options say.
func (s *service) PreStartContainer(context.Context, *v1beta1.PreStartContainerRequest) (*v1beta1.PreStartContainerResponse, error) {
	return &v1beta1.PreStartContainerResponse{}, nil
}

// checkIDs refuses an ID the plugin did not advertise, naming it.
func (s *service) checkIDs(ids []string) error {
	for _, id := range ids {
		if i, err := strconv.Atoi(id); err != nil || i < 0 || i >= s.count || strconv.Itoa(i) != id {
			return status.Errorf(codes.InvalidArgument, "unknown device %q: this node has GPUs 0 to %d", id, s.count-1)
		}
	}
	return nil
}

// containerAllocation is one container's share: its GPUs' indices, in the order given,
// in NVIDIA's and CUDA's variables, and the device nodes under devDir of those GPUs and
// of the driver's control, those that exist. CUDA counts in PCI bus order, as the
// indices do (nvidia-smi's numbering), rather than fastest first.
func containerAllocation(devDir string, ids []string) *v1beta1.ContainerAllocateResponse {
	list := strings.Join(ids, ",")
	resp := &v1beta1.ContainerAllocateResponse{Envs: map[string]string{
		"NVIDIA_VISIBLE_DEVICES": list,
		"CUDA_VISIBLE_DEVICES":   list,
		"CUDA_DEVICE_ORDER":      "PCI_BUS_ID",
	}}
	nodes := make([]string, 0, len(ids)+len(controlNodes))
	for _, id := range ids {
		nodes = append(nodes, "nvidia"+id)
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
