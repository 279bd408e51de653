package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
)

// child is the user's command, running in its own process group so that a signal
// reaches every process it started (a shell script's children too).
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, once done is closed
}

// startCommand starts argv in dir (the agent's own when empty) with its standard output
// and error going to stdout and stderr, and returns it running. The error is an exitError with the code a shell
// would give when the command cannot be found or run.
func startCommand(argv []string, dir string, stdout, stderr io.Writer) (*child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = os.Stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the agent dies, so does the command: no orphan trains on unobserved.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		code := ExitCannotExecute
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = ExitCommandNotFound
		}
		return nil, fail(code, fmt.Errorf("starting %q: %w", argv[0], err))
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// signal sends sig to the command's process group.
func (c *child) signal(sig syscall.Signal) error {
	return syscall.Kill(-c.cmd.Process.Pid, sig)
}

// exitCode returns the command's exit code once it is done: its own, or 128+N when
// signal N killed it.
func (c *child) exitCode() int {
	var ee *exec.ExitError
	if c.err != nil && !errors.As(c.err, &ee) {
		return ExitInternal // Wait failed for another reason: output copying broke
	}
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return c.cmd.ProcessState.ExitCode()
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
