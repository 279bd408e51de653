// Package proc starts and supervises the processes that tfk8s runs itself: a test
// control plane's components, a local cluster's detached ones, a node's programs.
// One package, so that every process is started, watched and stopped the same way.
package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a process this package started or found, its output in a log file.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // the exit error, valid once done is closed
	// ownGroup says signals go to the process's group, which Start made for it.
	ownGroup bool

	// Detached processes (see detach.go) are known by pid; one found through its pid
	// file, not started by this process, has no cmd and no done channel.
	pid      int
	exe      string
	detached bool
}

// Options say how Start runs a process.
type Options struct {
	// Env is added to the caller's environment.
	Env []string
	// Dir is the working directory; "" keeps the caller's.
	Dir string
	// Append appends to the log instead of truncating it.
	Append bool
	// OwnGroup runs the process in a process group of its own, which Stop signals
	// whole, so that its children stop with it.
	OwnGroup bool
}

// Start starts bin with args as the process name, its output written to
// logDir/<name>.log. The kernel kills it if the caller dies first (Pdeathsig), so an
// interrupted test or node leaves nothing behind.
func Start(name, bin string, args []string, logDir string, opts Options) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if opts.Append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = opts.Dir
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: opts.OwnGroup, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}), ownGroup: opts.OwnGroup, pid: cmd.Process.Pid, exe: bin}
	go p.reap()
	return p, nil
}

// reap waits for the process to end and records how it did.
func (p *Process) reap() {
	p.err = p.cmd.Wait()
	close(p.done)
}

// Name is the name the process was started or found under.
func (p *Process) Name() string { return p.name }

// Pid is the process's id.
func (p *Process) Pid() int { return p.pid }

// LogPath is the file the process writes its output to.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed once a process this one started has ended; nil for a found one.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how a process this one started ended, once Done is closed.
func (p *Process) Err() error { return p.err }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	if p.done == nil {
		return !pidAlive(p.pid, p.exe)
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to grace for the process to end, then kills it. A
// detached process is stopped as StopDetached does.
func (p *Process) Stop(grace time.Duration) error {
	if p.detached {
		return p.stopDetached(grace)
	}
	if p.Exited() {
		return nil
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// signal sends sig to the process, or to its whole group if it has its own.
func (p *Process) signal(sig syscall.Signal) {
	if p.ownGroup {
		_ = syscall.Kill(-p.pid, sig)
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// LogTail returns the last lines of the process's log, for error messages.
func (p *Process) LogTail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	all := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// ExitError describes how the process ended, with the end of its log.
func (p *Process) ExitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, p.LogTail(20))
}

// WaitAny returns nil when ctx ends, or an error naming the first of procs, all
// started by Start, to exit before.
func WaitAny(ctx context.Context, procs []*Process) error {
	exited := make(chan *Process, len(procs))
	for _, p := range procs {
		go func() {
			<-p.done
			exited <- p
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case p := <-exited:
		return fmt.Errorf("%s exited: %v", p.name, p.err)
	}
}
