package nvml_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
)

// The static side reads what the command, built without cgo, reads through the
// fake library's C interface.
func TestCommandThroughFakeLibrary(t *testing.T) {
	cmd := nvmltest.Command(t)
	lib := nvmltest.Build(t, t.TempDir())
	devices, err := nvml.Devices(context.Background(), cmd, "--library", lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(devices) != 2 || devices[1].Minor != 3 || devices[1].Name != "Fake GPU 1" {
		t.Errorf("devices = %+v, want 2, the second /dev/nvidia3 named Fake GPU 1", devices)
	}

	s, err := nvml.StartSampler(nil, cmd, 50*time.Millisecond, "--library", lib)
	if err != nil {
		t.Fatal(err)
	}
	var got []nvml.Reading
	for deadline := time.Now().Add(10 * time.Second); got == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = s.Next().GPUs
	}
	want := []nvml.Reading{
		{Index: 0, UtilizationPercent: 40, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 16 << 30},
		{Index: 1, UtilizationPercent: 47, MemoryUsedBytes: 2 << 30, MemoryTotalBytes: 16 << 30},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("latest sample (-want +got):\n%s", diff)
	}
	s.Stop()
	if err := s.Err(); err != nil {
		t.Errorf("stopped sampler: %v", err)
	}
	// What the sampler read is counted once: after its end there is nothing new.
	s.Next()
	if got := s.Next(); got.GPUs != nil {
		t.Errorf("Next after the sampler ended = %+v, want nil", got)
	}

	_, err = nvml.Devices(context.Background(), cmd, "--library", filepath.Join(t.TempDir(), "none.so"))
	if !errors.Is(err, nvml.ErrNoLibrary) {
		t.Errorf("Devices without the library: %v, want ErrNoLibrary", err)
	}
	s, err = nvml.StartSampler(nil, cmd, time.Second, "--library", nvmltest.Build(t, t.TempDir(), "-DFAKE_INIT=9"))
	if err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if err := s.Err(); err == nil || errors.Is(err, nvml.ErrNoLibrary) || !strings.Contains(err.Error(), "NVML_ERROR_DRIVER_NOT_LOADED") {
		t.Errorf("sampler without a driver: %v, want NVML_ERROR_DRIVER_NOT_LOADED", err)
	}
}
