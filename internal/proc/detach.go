package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Detached processes outlive the process that starts them: local mode's `tfk8s local up`
// returns while the cluster keeps running, and `tfk8s local down`, another process,
// stops it. Each is known by two files in its directory: <name>.pid (the pid and the
// executable, so that a recycled pid is never mistaken for it) and <name>.log (its
// output, appended across restarts).

// pollInterval is how often a detached process is checked while it is being stopped.
const pollInterval = 50 * time.Millisecond

// StartDetached starts bin with args as the detached process name: in a session of its
// own, not killed with the caller, its output appended to dir/<name>.log and its pid
// recorded in dir/<name>.pid. env is added to the caller's environment.
func StartDetached(name, bin string, args, env []string, dir string) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor
	fmt.Fprintf(logFile, "=== %s: starting %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	// A new session: no controlling terminal (a Ctrl-C in the shell that ran
	// `tfk8s local up` must not reach it) and a process group of its own to stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{}), pid: cmd.Process.Pid, exe: bin, detached: true}
	// Reap the child while the caller lives; after that, init does.
	go p.reap()
	// Start returns once the child's close-on-exec pipe closes, a moment before the
	// kernel records the new program's arguments; until then /proc shows none, and
	// FindDetached in another process would not recognise it.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if argv0, ok := pidArgv0(p.pid); !ok || argv0 != "" {
			break
		}
	}
	if err := writePidFile(dir, name, p.pid, bin); err != nil {
		_ = p.stopDetached(time.Second)
		return nil, err
	}
	return p, nil
}

// FindDetached returns the process that dir/<name>.pid records if it is still running
// the executable recorded there, else nil.
func FindDetached(dir, name string) *Process {
	pid, exe, err := readPidFile(dir, name)
	if err != nil || !pidRuns(pid, exe) {
		return nil
	}
	return &Process{name: name, logPath: filepath.Join(dir, name+".log"), pid: pid, exe: exe, detached: true}
}

// StopDetached stops the process that dir/<name>.pid records, from any process: SIGTERM
// to it, then, once it has exited or grace has passed, SIGKILL to whatever remains of
// its process group. It removes the pid file. A missing pid file or a process that
// already ended is not an error; a process that survives SIGKILL is.
func StopDetached(dir, name string, grace time.Duration) error {
	p := FindDetached(dir, name)
	if p == nil {
		return removePidFile(dir, name)
	}
	return p.stopDetached(grace)
}

// stopDetached sends SIGTERM to the process, waits up to grace for it to end, then
// kills its process group, and removes its pid file if it still names the process.
func (p *Process) stopDetached(grace time.Duration) error {
	if !p.Exited() {
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		deadline := time.Now().Add(grace)
		for !p.Exited() && time.Now().Before(deadline) {
			time.Sleep(pollInterval)
		}
	}
	// The group's id is the leader's pid (Setsid); it may outlive its leader.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for !p.Exited() {
		if time.Now().After(deadline) {
			return fmt.Errorf("stopping %s: pid %d survived SIGKILL", p.name, p.pid)
		}
		time.Sleep(pollInterval)
	}
	dir := filepath.Dir(p.logPath)
	if pid, _, err := readPidFile(dir, p.name); err == nil && pid == p.pid {
		return removePidFile(dir, p.name)
	}
	return nil
}

// pidFile is where a detached process's pid is recorded.
func pidFile(dir, name string) string { return filepath.Join(dir, name+".pid") }

// writePidFile records pid and the executable it runs, atomically.
func writePidFile(dir, name string, pid int, exe string) error {
	tmp := pidFile(dir, name) + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d\n%s\n", pid, exe), 0o600); err != nil {
		return fmt.Errorf("writing the pid file of %s: %w", name, err)
	}
	if err := os.Rename(tmp, pidFile(dir, name)); err != nil {
		return fmt.Errorf("writing the pid file of %s: %w", name, err)
	}
	return nil
}

// readPidFile reads what writePidFile recorded.
func readPidFile(dir, name string) (int, string, error) {
	data, err := os.ReadFile(pidFile(dir, name))
	if err != nil {
		return 0, "", err
	}
	pidText, exe, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(pidText))
	if err != nil || pid <= 0 {
		return 0, "", fmt.Errorf("parsing pid file %s: %q is not a pid", pidFile(dir, name), pidText)
	}
	return pid, strings.TrimSpace(exe), nil
}

// removePidFile removes dir/<name>.pid; a missing file is fine.
func removePidFile(dir, name string) error {
	if err := os.Remove(pidFile(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the pid file of %s: %w", name, err)
	}
	return nil
}

// pidRuns reports whether pid is a live process (not a zombie) whose first argument is
// exe: a pid recycled by another program does not count.
func pidRuns(pid int, exe string) bool {
	argv0, ok := pidArgv0(pid)
	return ok && exe != "" && argv0 == exe
}

// pidAlive reports whether pid, once known to run exe, still does: it is alive and
// not a zombie, and runs exe or, as a process does while it exits, shows no arguments.
func pidAlive(pid int, exe string) bool {
	argv0, ok := pidArgv0(pid)
	return ok && (argv0 == "" || argv0 == exe)
}

// pidArgv0 returns the first argument of pid, "" while it exits, and whether pid is a
// live process (not a zombie).
func pidArgv0(pid int) (string, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return "", false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "", false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0), true
}
