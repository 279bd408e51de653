package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one upstream binary run by the control plane, its output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // the exit error, valid once done is closed

	// Detached processes (see detach.go) are known by pid; one found through its pid
	// file, not started by this process, has no cmd and no done channel.
	pid      int
	exe      string
	detached bool
}

// startProcess starts bin with args, writing its output to dir/<name>.log. The process
// runs in its own process group and is killed by the kernel if this process dies first
// (Pdeathsig), so an interrupted test leaves nothing behind.
func startProcess(name, bin string, args []string, dir string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
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

// stop sends SIGTERM to the process group, waits up to grace, then kills it.
func (p *process) stop(grace time.Duration) error {
	if p.detached {
		return p.stopDetached(grace)
	}
	if p.exited() {
		return nil
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-p.done
	}
	return nil
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
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

// exitError describes how the process ended, with the end of its log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, p.err, p.logPath, p.logTail(20))
}

// FreePorts reserves n distinct free TCP ports on 127.0.0.1, the one free-port helper
// of the whole tree. The listeners are held until all ports are chosen, so the same
// port is never handed out twice.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var errs []error
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			errs = append(errs, err)
			break
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, errors.Join(errs...)
}
