package nvmlcmd

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
)

func TestDevices(t *testing.T) {
	lib := nvmltest.Build(t, t.TempDir(), "-DFAKE_COUNT=3")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"devices", "--library", lib}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got []nvml.Device
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	minors := []int{}
	for _, d := range got {
		minors = append(minors, d.Minor)
	}
	if diff := cmp.Diff([]int{2, 3, 4}, minors); diff != "" {
		t.Errorf("minor numbers (-want +got):\n%s", diff)
	}
}

// An empty stdin has ended before the first tick: sample prints one line and stops.
func TestSampleOnce(t *testing.T) {
	lib := nvmltest.Build(t, t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"sample", "--library", lib, "--interval", "1h"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `{"gpus":[{"index":0,"utilizationPercent":40,"memoryUsedBytes":1073741824,"memoryTotalBytes":17179869184},` +
		`{"index":1,"utilizationPercent":47,"memoryUsedBytes":2147483648,"memoryTotalBytes":17179869184}]}` + "\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

// A GPU NVML will not read (a MIG-enabled one has no utilisation) is listed as such;
// the others are read on.
func TestSampleReadsOnPastAnUnreadableGPU(t *testing.T) {
	lib := nvmltest.Build(t, t.TempDir(), "-DFAKE_UTIL_FAIL=3", "-DFAKE_UTIL_FAIL_INDEX=0")
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"sample", "--library", lib, "--interval", "1h"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := `{"gpus":[{"index":1,"utilizationPercent":47,"memoryUsedBytes":2147483648,"memoryTotalBytes":17179869184}],` +
		`"unreadable":[{"index":0,"error":"nvmlDeviceGetUtilizationRates: NVML_ERROR_NOT_SUPPORTED"}]}` + "\n"
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
}

func TestNoGPU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		library func(t *testing.T) string
		code    int
		stderr  string
	}{
		{"no library", func(t *testing.T) string { return filepath.Join(t.TempDir(), "libnvidia-ml.so.1") }, nvml.ExitNoLibrary, "NVML not loadable"},
		{"no device", func(t *testing.T) string { return nvmltest.Build(t, t.TempDir(), "-DFAKE_COUNT=0") }, nvml.ExitNoGPU, "NVML sees no GPU"},
		{"driver not loaded", func(t *testing.T) string { return nvmltest.Build(t, t.TempDir(), "-DFAKE_INIT=9") }, nvml.ExitNoGPU, "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED"},
		{"no permission", func(t *testing.T) string { return nvmltest.Build(t, t.TempDir(), "-DFAKE_UTIL_FAIL=4") }, ExitFailed, "reading GPU 0: nvmlDeviceGetUtilizationRates: NVML_ERROR_NO_PERMISSION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run([]string{"sample", "--library", tc.library(t)}, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || stdout.Len() != 0 {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, stderr with %q, no stdout", code, stderr.String(), stdout.String(), tc.code, tc.stderr)
			}
		})
	}
}
