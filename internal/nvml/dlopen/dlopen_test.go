package dlopen

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/nvml"

	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
)

func TestReadsDevicesAndUse(t *testing.T) {
	l, err := Open(nvmltest.Build(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.Count()
	if err != nil || n != 2 {
		t.Fatalf("Count() = %d, %v; want 2", n, err)
	}
	var devices []nvml.Device
	var readings []nvml.Reading
	for i := range n {
		d, err := l.Device(i)
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Read(i)
		if err != nil {
			t.Fatal(err)
		}
		devices, readings = append(devices, d), append(readings, r)
	}
	wantDevices := []nvml.Device{
		{Index: 0, Minor: 2, UUID: "GPU-00000000-0000-0000-0000-000000000000", Name: "Fake GPU 0"},
		{Index: 1, Minor: 3, UUID: "GPU-00000000-0000-0000-0000-000000000001", Name: "Fake GPU 1"},
	}
	if diff := cmp.Diff(wantDevices, devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	wantReadings := []nvml.Reading{
		{Index: 0, UtilizationPercent: 40, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 16 << 30},
		{Index: 1, UtilizationPercent: 47, MemoryUsedBytes: 2 << 30, MemoryTotalBytes: 16 << 30},
	}
	if diff := cmp.Diff(wantReadings, readings); diff != "" {
		t.Errorf("readings (-want +got):\n%s", diff)
	}
	if _, err := l.Read(2); !isCode(err, "nvmlDeviceGetHandleByIndex_v2", 2) {
		t.Errorf("Read(2) of 2 devices: %v, want NVML_ERROR_INVALID_ARGUMENT", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func isCode(err error, call string, code Return) bool {
	var e *Error
	return errors.As(err, &e) && e.Call == call && e.Code == code
}

func TestErrors(t *testing.T) {
	t.Run("no library", func(t *testing.T) {
		_, err := Open(filepath.Join(t.TempDir(), "libnvidia-ml.so.1"))
		if !errors.Is(err, nvml.ErrNoLibrary) {
			t.Errorf("Open of a missing file: %v, want ErrNoLibrary", err)
		}
	})
	t.Run("driver not loaded", func(t *testing.T) {
		_, err := Open(nvmltest.Build(t, t.TempDir(), "-DFAKE_INIT=9"))
		if !isCode(err, "nvmlInit_v2", ErrorDriverNotLoaded) || err.Error() != "nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED" {
			t.Errorf("Open: %v, want nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED", err)
		}
	})
	t.Run("function missing", func(t *testing.T) {
		_, err := Open(partial(t))
		if !isCode(err, "nvmlShutdown", ErrorFunctionNotFound) {
			t.Errorf("Open: %v, want nvmlShutdown: NVML_ERROR_FUNCTION_NOT_FOUND", err)
		}
	})
	t.Run("utilisation not supported", func(t *testing.T) {
		l, err := Open(nvmltest.Build(t, t.TempDir(), "-DFAKE_UTIL_FAIL=3"))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Read(0); !isCode(err, "nvmlDeviceGetUtilizationRates", ErrorNotSupported) {
			t.Errorf("Read: %v, want NVML_ERROR_NOT_SUPPORTED", err)
		}
	})
}

// partial builds testdata/partialnvml.c, a library with nvmlInit_v2 alone.
func partial(t *testing.T) string {
	t.Helper()
	return nvmltest.Compile(t, filepath.Join("testdata", "partialnvml.c"), t.TempDir())
}
