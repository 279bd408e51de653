package nvml

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoLibrary is where NVML could not be loaded: no NVIDIA driver on this machine or
// in this container, which is not a fault. dlopen.Open and tfk8s-nvml's callers
// both say it.
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

// statusError is the sampler's failure, from its wait status: nil where it exited 0.
func statusError(ws syscall.WaitStatus, stderr []byte) error {
	msg := strings.TrimSpace(string(stderr))
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited() && ws.ExitStatus() == ExitNoLibrary:
		return noLibrary(msg)
	case msg != "":
		return errors.New(msg)
	case ws.Signaled():
		return fmt.Errorf("%s: %v", Command, ws.Signal())
	}
	return fmt.Errorf("%s: exit status %d", Command, ws.ExitStatus())
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

// Sampler runs cmd sample and keeps its latest sample until Next hands it out.
type Sampler struct {
	stdin *os.File
	done  chan struct{}

	mu     sync.Mutex // guards what follows
	latest Sample     // zero once handed out
	err    error      // why it ended, once done is closed
}

// Starter starts cmd and returns where its wait status arrives once it has exited:
// a process that reaps every child (the agent, a subreaper) collects the status
// before exec.Cmd.Wait could.
type Starter func(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error)

// execStarter starts cmd and waits for it with exec.
func execStarter(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	go func() {
		_ = cmd.Wait()
		ch <- cmd.ProcessState.Sys().(syscall.WaitStatus)
	}()
	return ch, nil
}

// StartSampler starts cmd sample with start (exec's own if nil), sampling every
// interval, with args after. Its input and output are pipes of the Sampler's own, as
// exec's would be closed only by exec.Cmd.Wait.
func StartSampler(start Starter, cmd string, interval time.Duration, args ...string) (*Sampler, error) {
	if start == nil {
		start = execStarter
	}
	c := exec.Command(cmd, append([]string{"sample", "--interval", interval.String()}, args...)...)
	var files [3][2]*os.File // stdin, stdout, stderr: read and write ends
	for i := range files {
		r, w, err := os.Pipe()
		if err != nil {
			closePipes(files[:i])
			return nil, err
		}
		files[i] = [2]*os.File{r, w}
	}
	c.Stdin, c.Stdout, c.Stderr = files[0][0], files[1][1], files[2][1]
	exited, err := start(c)
	// The command has its own copies of its ends.
	for _, f := range []*os.File{files[0][0], files[1][1], files[2][1]} {
		_ = f.Close()
	}
	if err != nil {
		for _, f := range []*os.File{files[0][1], files[1][0], files[2][0]} {
			_ = f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", cmd, err)
	}
	s := &Sampler{stdin: files[0][1], done: make(chan struct{})}
	stdout, stderrR := files[1][0], files[2][0]
	go func() {
		defer close(s.done)
		var stderr bytes.Buffer
		copied := make(chan struct{})
		go func() { defer close(copied); _, _ = io.Copy(&stderr, stderrR); _ = stderrR.Close() }()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var smp Sample
			if err := json.Unmarshal(sc.Bytes(), &smp); err != nil {
				continue
			}
			s.mu.Lock()
			s.latest = smp
			s.mu.Unlock()
		}
		_ = stdout.Close()
		ws := <-exited
		<-copied
		_ = c.Process.Release()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.err = statusError(ws, stderr.Bytes())
	}()
	return s, nil
}

// closePipes closes both ends of pipes.
func closePipes(pipes [][2]*os.File) {
	for _, p := range pipes {
		_ = p[0].Close()
		_ = p[1].Close()
	}
}

// Next returns the sample taken since the last call, each sample once: a zero
// Sample when none came since, as once the command has ended. A sample handed out
// twice would count twice in a mean.
func (s *Sampler) Next() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	smp := s.latest
	s.latest = Sample{}
	return smp
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
