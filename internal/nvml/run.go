package nvml

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrNoLibrary is where tfk8s-nvml could not load NVML: no NVIDIA driver here.
var ErrNoLibrary = errors.New("NVML not loadable")

// noLibrary is ErrNoLibrary as tfk8s-nvml said it.
type noLibrary string

func (e noLibrary) Error() string        { return string(e) }
func (e noLibrary) Is(target error) bool { return target == ErrNoLibrary }

// Beside returns the tfk8s-nvml command in the running executable's directory, where
// make build and the agent's install put it; "" where there is none.
func Beside() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), Command)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// exitError turns the command's failure into an error that says why, wrapping
// ErrNoLibrary where NVML could not be loaded.
func exitError(err error, stderr []byte) error {
	msg := strings.TrimSpace(string(stderr))
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == ExitNoLibrary {
		return noLibrary(msg)
	}
	if msg == "" {
		return err
	}
	return errors.New(msg)
}

// Devices runs cmd devices and returns the GPUs it lists.
func Devices(ctx context.Context, cmd string, args ...string) ([]Device, error) {
	var stdout, stderr bytes.Buffer
	c := exec.CommandContext(ctx, cmd, append([]string{"devices"}, args...)...)
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return nil, exitError(err, stderr.Bytes())
	}
	var out []Device
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("reading %s devices: %w", cmd, err)
	}
	return out, nil
}

// Sampler runs cmd sample and keeps its latest sample.
type Sampler struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	done  chan struct{}

	mu     sync.Mutex // guards what follows
	latest []Reading
	err    error // why it ended, once done is closed
}

// StartSampler starts cmd sample, sampling every interval, with args after.
func StartSampler(cmd string, interval time.Duration, args ...string) (*Sampler, error) {
	c := exec.Command(cmd, append([]string{"sample", "--interval", interval.String()}, args...)...)
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd, err)
	}
	s := &Sampler{cmd: c, stdin: stdin, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var smp Sample
			if err := json.Unmarshal(sc.Bytes(), &smp); err != nil {
				continue
			}
			s.mu.Lock()
			s.latest = smp.GPUs
			s.mu.Unlock()
		}
		err := c.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.err = exitError(err, stderr.Bytes())
		}
	}()
	return s, nil
}

// Latest returns the latest sample's readings; none before the first.
func (s *Sampler) Latest() []Reading {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// Done is closed when the command has ended; Err then says why, nil if Stop ended it.
func (s *Sampler) Done() <-chan struct{} { return s.done }

// Err is why the command ended: nil before, or where Stop ended it.
func (s *Sampler) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stop ends the command, by closing its input, and waits for it.
func (s *Sampler) Stop() {
	_ = s.stdin.Close()
	<-s.done
}
