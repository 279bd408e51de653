// Package nvmlcmd is the tfk8s-nvml command: what it prints is the interface the
// agent and the local node's device plugin read (Devices, Sample).
package nvmlcmd

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/nvml/dlopen"
)

// Exit codes, and nvml.ExitNoGPU.
const (
	// ExitUsage is a command line it does not understand.
	ExitUsage = 2
	// ExitFailed is a GPU NVML sees and cannot read.
	ExitFailed = 1
)

const usage = `usage:
  tfk8s-nvml devices [--library PATH]
  tfk8s-nvml sample [--library PATH] [--interval 2s]`

// Run runs the command line args and returns the exit code. sample stops when stdin
// reaches its end, so that it never outlives the process that reads it.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "devices" && args[0] != "sample") {
		fmt.Fprintln(stderr, usage)
		return ExitUsage
	}
	fs := flag.NewFlagSet(nvml.Command+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	library := fs.String("library", nvml.Library, "NVML's file, looked up as the dynamic loader does")
	interval := fs.Duration("interval", 2*time.Second, "time between two samples")
	if err := fs.Parse(args[1:]); err != nil {
		return ExitUsage
	}
	if *interval <= 0 {
		fmt.Fprintf(stderr, "%s: --interval %v: must be positive\n", nvml.Command, *interval)
		return ExitUsage
	}
	l, n, err := open(*library)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", nvml.Command, err)
		if errors.Is(err, nvml.ErrNoLibrary) {
			return nvml.ExitNoLibrary
		}
		return nvml.ExitNoGPU
	}
	defer l.Close()
	if args[0] == "devices" {
		err = devices(l, n, stdout)
	} else {
		err = sample(l, n, *interval, stdin, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", nvml.Command, err)
		return ExitFailed
	}
	return 0
}

// open loads NVML and counts the GPUs; an error where there is none to read.
func open(library string) (*dlopen.Lib, int, error) {
	l, err := dlopen.Open(library)
	if err != nil {
		return nil, 0, fmt.Errorf("no GPU figures: %w", err)
	}
	n, err := l.Count()
	if err == nil && n == 0 {
		err = errors.New("NVML sees no GPU")
	}
	if err != nil {
		l.Close()
		return nil, 0, fmt.Errorf("no GPU figures: %w", err)
	}
	return l, n, nil
}

func devices(l *dlopen.Lib, n int, stdout io.Writer) error {
	out := make([]nvml.Device, 0, n)
	for i := range n {
		d, err := l.Device(i)
		if err != nil {
			return fmt.Errorf("describing GPU %d: %w", i, err)
		}
		out = append(out, d)
	}
	return json.NewEncoder(stdout).Encode(out)
}

// sample prints a Sample every interval until stdin ends. A GPU that cannot be read
// is listed as such, and the others are read on; where the first sample reads none,
// it fails at once, as there is nothing to sample.
func sample(l *dlopen.Lib, n int, interval time.Duration, stdin io.Reader, stdout io.Writer) error {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(done)
	}()
	enc := json.NewEncoder(stdout)
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		s := nvml.Sample{GPUs: make([]nvml.Reading, 0, n)}
		var firstErr error
		for i := range n {
			r, err := l.Read(i)
			if err != nil {
				firstErr = cmp.Or(firstErr, fmt.Errorf("reading GPU %d: %w", i, err))
				s.Unreadable = append(s.Unreadable, nvml.Unreadable{Index: i, Error: err.Error()})
				continue
			}
			s.GPUs = append(s.GPUs, r)
		}
		if first && len(s.GPUs) == 0 {
			return firstErr
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
		select {
		case <-done:
			return nil
		case <-t.C:
		}
	}
}
