package node

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
	"strings"
	"syscall"
	"time"
)

// runc drives the runc binary, its state kept under root.
type runc struct {
	bin  string
	root string
}

// command prepares a runc invocation with the node's state root.
func (r runc) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, r.bin, append([]string{"--root", r.root}, args...)...)
}

// output runs a short runc command and returns its output, with runc's message in the
// error.
func (r runc) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("runc %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// start runs container id from bundle in the foreground: runc stays the container's
// parent, passes it stdout and stderr, and exits with its exit code (128+signal when
// killed). runc's own messages go to logPath; the pid file appears once the container
// exists. runc dies with the node (Pdeathsig) and the node's next start removes what is
// left.
func (r runc) start(id, bundle, pidFile, logPath string, stdout, stderr io.Writer) (*exec.Cmd, error) {
	cmd := exec.Command(r.bin, "--root", r.root, "--log", logPath, "--log-format", "json",
		"run", "--bundle", bundle, "--pid-file", pidFile, id)
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting runc: %w", err)
	}
	return cmd, nil
}

// kill sends sig to the container's init process. A container already gone is not an
// error.
func (r runc) kill(ctx context.Context, id string, sig syscall.Signal) error {
	_, err := r.output(ctx, "kill", id, fmt.Sprint(int(sig)))
	if err != nil && r.gone(ctx, id) {
		return nil
	}
	return err
}

// gone reports whether runc no longer knows the container, or knows it stopped.
func (r runc) gone(ctx context.Context, id string) bool {
	out, err := r.output(ctx, "state", id)
	if err != nil {
		return true
	}
	var st struct {
		Status string `json:"status"`
	}
	return json.Unmarshal(out, &st) == nil && st.Status == "stopped"
}

// exec runs args inside a running container with its environment, returning the exit
// code and combined output (capped). A timeout kills the runc exec process; what it
// started inside the container may outlive it, as with other runtimes.
func (r runc) exec(ctx context.Context, id string, args []string, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := r.command(ctx, append([]string{"exec", id}, args...)...)
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.Bytes(), fmt.Errorf("command timed out after %s", timeout)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), out.Bytes(), nil
	}
	if err != nil {
		return -1, out.Bytes(), fmt.Errorf("running runc exec: %w", err)
	}
	return 0, out.Bytes(), nil
}

// forceDelete removes a container whatever its state, killing its processes.
func (r runc) forceDelete(ctx context.Context, id string) error {
	_, err := r.output(ctx, "delete", "--force", id)
	if err != nil && r.gone(ctx, id) {
		_, _ = r.output(ctx, "delete", id)
		return nil
	}
	return err
}

// list returns the IDs of the containers runc knows under the node's root.
func (r runc) list(ctx context.Context) ([]string, error) {
	if _, err := os.Stat(r.root); os.IsNotExist(err) {
		return nil, nil
	}
	out, err := r.output(ctx, "list", "--quiet")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// lastError returns the message of the last error runc logged in its JSON log file.
func lastRuncError(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	var msg string
	s := bufio.NewScanner(f)
	for s.Scan() {
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal(s.Bytes(), &entry) == nil && (entry.Level == "error" || entry.Level == "fatal") {
			msg = entry.Msg
		}
	}
	return msg
}

// cappedBuffer keeps the first 64 KiB written to it, as probes and hooks report.
type cappedBuffer struct{ bytes.Buffer }

const maxCapturedOutput = 64 * 1024

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxCapturedOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
