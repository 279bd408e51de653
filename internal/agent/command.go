package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// child is the user's command, running in its own process group so that a signal
// reaches every process it started (a shell script's children too). Its output comes
// through pipes the agent reads itself: a process the command left behind may hold
// them open, and the agent must be able to stop reading when it has ended the rest.
type child struct {
	cmd    *exec.Cmd
	done   chan struct{}      // closed once the command has exited
	status syscall.WaitStatus // once done is closed
	pipes  []*os.File         // the read ends of stdout and stderr
	copies sync.WaitGroup
	// confined is what starting it without CAP_SYS_PTRACE found; zero when it was
	// started as it is.
	confined confinement
}

// startCommand starts argv in dir (the agent's own when empty) with the environment
// env, its standard output and error copied to stdout and stderr, and returns it
// running; r reports its exit. When confine is set, it starts without CAP_SYS_PTRACE
// (see confine.go). The error is an exitError with the code a shell would give when
// the command cannot be found or run.
func startCommand(r *reaper, argv []string, dir string, env []string, stdout, stderr io.Writer, confine bool) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = os.Stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the agent dies, so does the command: no orphan trains on unobserved.
		Pdeathsig: syscall.SIGKILL,
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	var writeEnds []*os.File
	for _, w := range []io.Writer{stdout, stderr} {
		pr, pw, err := os.Pipe()
		if err != nil {
			c.closePipes()
			closeAll(writeEnds)
			return nil, fail(ExitInternal, fmt.Errorf("creating the command's output pipe: %w", err))
		}
		c.pipes, writeEnds = append(c.pipes, pr), append(writeEnds, pw)
		c.copies.Go(func() { _, _ = io.Copy(w, pr) })
	}
	cmd.Stdout, cmd.Stderr = writeEnds[0], writeEnds[1]
	var err error
	if confine {
		c.confined, err = startConfined(r.start, cmd, c.done)
	} else {
		err = r.start(cmd)
	}
	closeAll(writeEnds) // the command has its own copies
	if err != nil {
		c.closePipes()
		code := ExitCannotExecute
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = ExitCommandNotFound
		}
		return nil, fail(code, fmt.Errorf("starting %q: %w", argv[0], err))
	}
	go func() {
		c.status = <-r.status
		_ = cmd.Process.Release()
		close(c.done)
	}()
	return c, nil
}

// closeAll closes files, ignoring errors.
func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// closePipes stops reading the output and waits for the copies to end.
func (c *child) closePipes() {
	for _, p := range c.pipes {
		_ = p.SetReadDeadline(time.Now())
	}
	c.copies.Wait()
	closeAll(c.pipes)
}

// drainOutput copies what is left of the output, until every holder of the pipes has
// closed them or timeout passes, then stops reading.
func (c *child) drainOutput(timeout time.Duration) {
	copied := make(chan struct{})
	go func() { c.copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(timeout):
	}
	c.closePipes()
}

// pgid is the command's process group.
func (c *child) pgid() int { return c.cmd.Process.Pid }

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) error {
	return syscall.Kill(-c.pgid(), sig)
}

// exitCode returns the command's exit code once it is done: its own, or 128+N when
// signal N killed it.
func (c *child) exitCode() int {
	if c.status.Signaled() {
		return 128 + int(c.status.Signal())
	}
	return c.status.ExitStatus()
}
