package gpus_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
)

// registeredPlugin runs a plugin of count GPUs, with devDir as /dev, beside a kubelet
// and dials it as the kubelet does once it registered.
func registeredPlugin(t *testing.T, count int, devDir string) v1beta1.DevicePluginClient {
	t.Helper()
	dir := pluginDir(t)
	k := startKubelet(t, dir, nil)
	startPlugin(t, &gpus.Plugin{Count: count, DevDir: devDir, PluginDir: dir})
	return dial(t, dir, k.nextRegistration(t).Endpoint)
}

// allocation is what a container with GPUs ids gets: their list in the environment and
// the device nodes named, found in devDir.
func allocation(devDir, ids string, nodes ...string) *v1beta1.ContainerAllocateResponse {
	r := &v1beta1.ContainerAllocateResponse{Envs: map[string]string{
		"NVIDIA_VISIBLE_DEVICES": ids, "CUDA_VISIBLE_DEVICES": ids, "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
	}}
	for _, n := range nodes {
		r.Devices = append(r.Devices, &v1beta1.DeviceSpec{ContainerPath: "/dev/" + n, HostPath: filepath.Join(devDir, n), Permissions: "rw"})
	}
	return r
}

func TestAllocateGivesEachContainerItsGPUsAlone(t *testing.T) {
	// GPUs 0 and 1 have device nodes, 2 and 3 none; of the control nodes only nvidiactl is there.
	dev := devDir(t, "nvidia0", "nvidia1", "nvidiactl")
	client := registeredPlugin(t, 4, dev)
	for _, tc := range []struct {
		name       string
		containers [][]string
		want       []*v1beta1.ContainerAllocateResponse
		wantErr    string // a part of the error's message
	}{{
		name:       "one GPU",
		containers: [][]string{{"1"}},
		want:       []*v1beta1.ContainerAllocateResponse{allocation(dev, "1", "nvidia1", "nvidiactl")},
	}, {
		name:       "GPUs in the order given",
		containers: [][]string{{"1", "0"}},
		want:       []*v1beta1.ContainerAllocateResponse{allocation(dev, "1,0", "nvidia1", "nvidia0", "nvidiactl")},
	}, {
		name:       "a GPU without a device node",
		containers: [][]string{{"3"}},
		want:       []*v1beta1.ContainerAllocateResponse{allocation(dev, "3", "nvidiactl")},
	}, {
		name:       "two containers",
		containers: [][]string{{"0"}, {"1", "2"}},
		want: []*v1beta1.ContainerAllocateResponse{
			allocation(dev, "0", "nvidia0", "nvidiactl"),
			allocation(dev, "1,2", "nvidia1", "nvidiactl"),
		},
	}, {
		name:       "an ID past the last GPU",
		containers: [][]string{{"0"}, {"1", "4"}},
		wantErr:    `"4"`,
	}, {
		name:       "an ID not written as an index",
		containers: [][]string{{"01"}},
		wantErr:    `"01"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req := &v1beta1.AllocateRequest{}
			for _, ids := range tc.containers {
				req.ContainerRequests = append(req.ContainerRequests, &v1beta1.ContainerAllocateRequest{DevicesIds: ids})
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			resp, err := client.Allocate(ctx, req)
			if tc.wantErr != "" {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Allocate error = %v; want InvalidArgument naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resp.ContainerResponses, protocmp.Transform()); diff != "" {
				t.Errorf("allocation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsAskForNoCallsBeyondAllocate(t *testing.T) {
	client := registeredPlugin(t, 4, devDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	opts, err := client.GetDevicePluginOptions(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&v1beta1.DevicePluginOptions{}, opts, protocmp.Transform()); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if _, err := client.PreStartContainer(ctx, &v1beta1.PreStartContainerRequest{DevicesIds: []string{"0"}}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
	pref, err := client.GetPreferredAllocation(ctx, &v1beta1.PreferredAllocationRequest{
		ContainerRequests: []*v1beta1.ContainerPreferredAllocationRequest{
			{AvailableDeviceIDs: []string{"0", "1", "2", "3"}, MustIncludeDeviceIDs: []string{"2"}, AllocationSize: 2},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []*v1beta1.ContainerPreferredAllocationResponse{{DeviceIDs: []string{"2", "0"}}}
	if diff := cmp.Diff(want, pref.ContainerResponses, protocmp.Transform()); diff != "" {
		t.Errorf("preferred allocation (-want +got):\n%s", diff)
	}
}
