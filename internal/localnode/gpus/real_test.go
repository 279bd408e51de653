package gpus_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
)

// The host's GPUs, enumerated through tfk8s-nvml and a libnvidia-ml.so.1 with NVML's
// C interface on the loader's path (two GPUs, /dev/nvidia2 and /dev/nvidia3), are
// advertised by UUID; a container gets its GPU's device node alone, the driver's
// libraries, and the UUID in CUDA's variable.
func TestRealGPUs(t *testing.T) {
	cmd := nvmltest.Command(t)
	libDir := t.TempDir()
	nvmltest.Build(t, libDir)
	t.Setenv("LD_LIBRARY_PATH", libDir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	devs, err := gpus.RealDevices(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	uuid0, uuid1 := "GPU-00000000-0000-0000-0000-000000000000", "GPU-00000000-0000-0000-0000-000000000001"
	want := []gpus.Device{{UUID: uuid0, Minor: 2, Name: "Fake GPU 0"}, {UUID: uuid1, Minor: 3, Name: "Fake GPU 1"}}
	if diff := cmp.Diff(want, devs); diff != "" {
		t.Fatalf("devices (-want +got):\n%s", diff)
	}
	// libcuda.so.1 is a link to its versioned file, as the driver installs it.
	if err := os.WriteFile(filepath.Join(libDir, "libcuda.so.580.1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("libcuda.so.580.1", filepath.Join(libDir, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}

	dev := devDir(t, "nvidia2", "nvidia3", "nvidiactl")
	dir := pluginDir(t)
	k := startKubelet(t, dir, nil)
	startPlugin(t, &gpus.Plugin{Devices: devs, DevDir: dev, PluginDir: dir, LibDirs: []string{libDir}})
	client := dial(t, dir, k.nextRegistration(t).Endpoint)
	got, _ := listDevices(t, client)
	if diff := cmp.Diff(healthy(uuid0, uuid1), got, protocmp.Transform()); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	resp, err := client.Allocate(ctx, &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{uuid1}}}})
	if err != nil {
		t.Fatal(err)
	}
	wantAlloc := allocation(dev, uuid1, "nvidia3", "nvidiactl")
	wantAlloc.Envs["LD_LIBRARY_PATH"] = gpus.DriverLibDir
	wantAlloc.Mounts = []*v1beta1.Mount{
		{ContainerPath: gpus.DriverLibDir + "/libcuda.so.1", HostPath: filepath.Join(libDir, "libcuda.so.580.1"), ReadOnly: true},
		{ContainerPath: gpus.DriverLibDir + "/libnvidia-ml.so.1", HostPath: filepath.Join(libDir, "libnvidia-ml.so.1"), ReadOnly: true},
	}
	if diff := cmp.Diff([]*v1beta1.ContainerAllocateResponse{wantAlloc}, resp.ContainerResponses, protocmp.Transform()); diff != "" {
		t.Errorf("allocation (-want +got):\n%s", diff)
	}
	if _, err := client.Allocate(ctx, &v1beta1.AllocateRequest{ContainerRequests: []*v1beta1.ContainerAllocateRequest{{DevicesIds: []string{"0"}}}}); err == nil {
		t.Error("Allocate of a fake GPU's ID on a node of real ones: no error")
	}
}
