// Package dlopen loads NVML (libnvidia-ml.so.1), the NVIDIA driver's management
// library, at run time without cgo, through github.com/ebitengine/purego.
//
// Loading a library makes a binary dynamically linked against the C library's
// loader, even built with CGO_ENABLED=0. tfk8s's own binaries stay static, as they
// run in every image, so only cmd/tfk8s-nvml links this package (package nvml).
package dlopen

import (
	"bytes"
	"fmt"
	"runtime"

	"github.com/ebitengine/purego"

	"github.com/tfk8s/tfk8s/internal/nvml"
)

// Return is an nvmlReturn_t, NVML's result code.
type Return int32

// NVML's result codes that tfk8s tells apart; any other is reported by number.
const (
	Success               Return = 0
	ErrorUninitialized    Return = 1
	ErrorNotSupported     Return = 3
	ErrorNoPermission     Return = 4
	ErrorNotFound         Return = 6
	ErrorDriverNotLoaded  Return = 9
	ErrorLibraryNotFound  Return = 12
	ErrorFunctionNotFound Return = 13
	ErrorGPUIsLost        Return = 15
	ErrorUnknown          Return = 999
)

var returnNames = map[Return]string{
	Success:               "NVML_SUCCESS",
	ErrorUninitialized:    "NVML_ERROR_UNINITIALIZED",
	ErrorNotSupported:     "NVML_ERROR_NOT_SUPPORTED",
	ErrorNoPermission:     "NVML_ERROR_NO_PERMISSION",
	ErrorNotFound:         "NVML_ERROR_NOT_FOUND",
	ErrorDriverNotLoaded:  "NVML_ERROR_DRIVER_NOT_LOADED",
	ErrorLibraryNotFound:  "NVML_ERROR_LIBRARY_NOT_FOUND",
	ErrorFunctionNotFound: "NVML_ERROR_FUNCTION_NOT_FOUND",
	ErrorGPUIsLost:        "NVML_ERROR_GPU_IS_LOST",
	ErrorUnknown:          "NVML_ERROR_UNKNOWN",
}

func (r Return) String() string {
	if s, ok := returnNames[r]; ok {
		return s
	}
	return fmt.Sprintf("nvmlReturn_t %d", int32(r))
}

// Error is a call that NVML answered with a code other than NVML_SUCCESS.
type Error struct {
	// Call is the NVML function, "nvmlInit_v2".
	Call string
	Code Return
}

func (e *Error) Error() string { return e.Call + ": " + e.Code.String() }

// The sizes of the buffers NVML documents for a device's name and UUID.
const (
	nameBufferSize = 96
	uuidBufferSize = 96
)

// utilization is nvmlUtilization_t: percentages over NVML's last sample period.
type utilization struct {
	GPU    uint32
	Memory uint32
}

// memory is nvmlMemory_t, in bytes.
type memory struct {
	Total uint64
	Free  uint64
	Used  uint64
}

// Lib is NVML, loaded and initialised. Its methods must not be called after Close.
type Lib struct {
	handle uintptr

	initV2           func() Return
	shutdown         func() Return
	deviceCountV2    func(*uint32) Return
	handleByIndexV2  func(uint32, *uintptr) Return
	utilizationRates func(uintptr, *utilization) Return
	memoryInfo       func(uintptr, *memory) Return
	deviceName       func(uintptr, *byte, uint32) Return
	deviceUUID       func(uintptr, *byte, uint32) Return
	minorNumber      func(uintptr, *uint32) Return
}

// Open loads the library at path (a file name is looked up as the dynamic loader
// does) and initialises NVML. An error wraps nvml.ErrNoLibrary where the library could not
// be loaded, or is an *Error where NVML refused to start (no driver, no device).
func Open(path string) (*Lib, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", nvml.ErrNoLibrary, err)
	}
	l := &Lib{handle: h}
	syms := []struct {
		name string
		fn   any
	}{
		{"nvmlInit_v2", &l.initV2},
		{"nvmlShutdown", &l.shutdown},
		{"nvmlDeviceGetCount_v2", &l.deviceCountV2},
		{"nvmlDeviceGetHandleByIndex_v2", &l.handleByIndexV2},
		{"nvmlDeviceGetUtilizationRates", &l.utilizationRates},
		{"nvmlDeviceGetMemoryInfo", &l.memoryInfo},
		{"nvmlDeviceGetName", &l.deviceName},
		{"nvmlDeviceGetUUID", &l.deviceUUID},
		{"nvmlDeviceGetMinorNumber", &l.minorNumber},
	}
	for _, s := range syms {
		sym, err := purego.Dlsym(h, s.name)
		if err != nil {
			_ = purego.Dlclose(h)
			return nil, &Error{Call: s.name, Code: ErrorFunctionNotFound}
		}
		purego.RegisterFunc(s.fn, sym)
	}
	if r := l.initV2(); r != Success {
		_ = purego.Dlclose(h)
		return nil, &Error{Call: "nvmlInit_v2", Code: r}
	}
	return l, nil
}

// Close shuts NVML down and unloads the library.
func (l *Lib) Close() error {
	r := l.shutdown()
	_ = purego.Dlclose(l.handle)
	if r != Success {
		return &Error{Call: "nvmlShutdown", Code: r}
	}
	return nil
}

// call turns a result code into an error.
func call(name string, r Return) error {
	if r != Success {
		return &Error{Call: name, Code: r}
	}
	return nil
}

// Count is how many GPUs NVML sees: in a container, those the runtime gave it.
func (l *Lib) Count() (int, error) {
	var n uint32
	if err := call("nvmlDeviceGetCount_v2", l.deviceCountV2(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device describes the GPU at index i.
func (l *Lib) Device(i int) (nvml.Device, error) {
	h, err := l.device(i)
	if err != nil {
		return nvml.Device{}, err
	}
	d := nvml.Device{Index: i}
	var minor uint32
	if err := call("nvmlDeviceGetMinorNumber", l.minorNumber(h, &minor)); err != nil {
		return nvml.Device{}, err
	}
	d.Minor = int(minor)
	if d.Name, err = l.text("nvmlDeviceGetName", l.deviceName, h, nameBufferSize); err != nil {
		return nvml.Device{}, err
	}
	if d.UUID, err = l.text("nvmlDeviceGetUUID", l.deviceUUID, h, uuidBufferSize); err != nil {
		return nvml.Device{}, err
	}
	return d, nil
}

// Read reads the use of the GPU at index i.
func (l *Lib) Read(i int) (nvml.Reading, error) {
	h, err := l.device(i)
	if err != nil {
		return nvml.Reading{}, err
	}
	var u utilization
	if err := call("nvmlDeviceGetUtilizationRates", l.utilizationRates(h, &u)); err != nil {
		return nvml.Reading{}, err
	}
	var m memory
	if err := call("nvmlDeviceGetMemoryInfo", l.memoryInfo(h, &m)); err != nil {
		return nvml.Reading{}, err
	}
	return nvml.Reading{Index: i, UtilizationPercent: int(u.GPU), MemoryUsedBytes: int64(m.Used), MemoryTotalBytes: int64(m.Total)}, nil
}

func (l *Lib) device(i int) (uintptr, error) {
	var h uintptr
	if i < 0 {
		return 0, fmt.Errorf("GPU index %d: must be at least 0", i)
	}
	if err := call("nvmlDeviceGetHandleByIndex_v2", l.handleByIndexV2(uint32(i), &h)); err != nil {
		return 0, err
	}
	return h, nil
}

// text reads a NUL-terminated string NVML writes into a buffer of size n.
func (l *Lib) text(name string, fn func(uintptr, *byte, uint32) Return, h uintptr, n int) (string, error) {
	buf := make([]byte, n)
	r := fn(h, &buf[0], uint32(n))
	runtime.KeepAlive(buf)
	if err := call(name, r); err != nil {
		return "", err
	}
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return string(buf), nil
}
