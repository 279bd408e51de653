package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/localnode"
)

func TestNodeDRADevices(t *testing.T) {
	slice := func(driver, node string, devices int) resourcev1.ResourceSlice {
		s := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: driver, Devices: make([]resourcev1.Device, devices)}}
		if node != "" {
			s.Spec.NodeName = ptr.To(node)
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		slices []resourcev1.ResourceSlice
		want   int
	}{
		{"none published yet", nil, 0},
		{"the node's", []resourcev1.ResourceSlice{slice(localnode.DRADriver, "n1", 2)}, 2},
		{"another node's", []resourcev1.ResourceSlice{slice(localnode.DRADriver, "n2", 2)}, 0},
		{"another driver's", []resourcev1.ResourceSlice{slice("gpu.example.com", "n1", 2)}, 0},
		{"a slice of no node", []resourcev1.ResourceSlice{slice(localnode.DRADriver, "", 2)}, 0},
		{"two slices", []resourcev1.ResourceSlice{slice(localnode.DRADriver, "n1", 1), slice(localnode.DRADriver, "n1", 1)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeDRADevices(tc.slices, "n1"); got != tc.want {
				t.Errorf("nodeDRADevices = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCheckDRADriverBinary(t *testing.T) {
	dir := t.TempDir()
	if err := checkDRADriverBinary(dir, 0); err != nil {
		t.Errorf("no DRA GPUs, no driver: %v, want no error", err)
	}
	err := checkDRADriverBinary(dir, 2)
	if err == nil || !strings.Contains(err.Error(), "--dra-gpus 2: dra-test-driver missing from "+dir) {
		t.Errorf("DRA GPUs without the driver: %v, want it named missing", err)
	}
	if err := os.WriteFile(filepath.Join(dir, localnode.DRADriverBinary), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkDRADriverBinary(dir, 2); err != nil {
		t.Errorf("DRA GPUs with the driver: %v, want no error", err)
	}
}
