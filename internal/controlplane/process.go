package controlplane

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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
// of the whole tree. The ports lie below the kernel's ephemeral range: a port from that
// range, free when chosen, may become the local port of any process's outgoing
// connection before the server meant for it listens (a local cluster's CoreDNS found
// its port taken by kube-controller-manager's connection while the registry was being
// filled). The listeners are held until all ports are chosen, so the same port is
// never handed out twice.
func FreePorts(n int) ([]int, error) {
	lo := ephemeralPortsStart()
	if lo-minPort < 100*n {
		return nil, fmt.Errorf("no room for %d ports between %d and the ephemeral range at %d", n, minPort, lo)
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		port := minPort + rand.IntN(lo-minPort)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken, or held by an earlier pick
		}
		defer l.Close()
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found %d free ports of %d between %d and %d", len(ports), n, minPort, lo)
	}
	return ports, nil
}

// minPort is the lowest port FreePorts hands out: above the well-known and most
// registered services' ports.
const minPort = 10000

// ephemeralPortsStart is the first port of the kernel's ephemeral range, 32768 unless
// net.ipv4.ip_local_port_range says otherwise.
func ephemeralPortsStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(data), &lo, &hi); err != nil || lo <= minPort {
		return 32768
	}
	return lo
}
