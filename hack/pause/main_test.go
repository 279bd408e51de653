//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runAsPause makes the test binary run main when a test starts it with this variable
// set: the tests drive the real command without a go build.
const runAsPause = "TFK8S_TEST_RUN_PAUSE"

func TestMain(m *testing.M) {
	if os.Getenv(runAsPause) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// pauseCommand is the test binary started as pause.
func pauseCommand(t *testing.T) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), runAsPause+"=1")
	return cmd
}

func TestExitsZeroOnSignal(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			cmd := pauseCommand(t)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The warning is written once the signals are caught: not PID 1 here.
			lines := bufio.NewScanner(stderr)
			if !lines.Scan() || lines.Text() != "Warning: pause should be the first process" {
				t.Fatalf("first line on stderr: %q, want the warning", lines.Text())
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			lines.Scan()
			if want := "Shutting down, got signal: " + sig.String(); lines.Text() != want {
				t.Errorf("stderr: %q, want %q", lines.Text(), want)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("pause after %v: %v, want exit status 0", sig, err)
			}
		})
	}
}

// TestReapsOrphans runs pause as PID 1 of a new PID namespace, as in a pod, and
// orphans a process in it: the kernel hands the orphan to pause, which must reap it
// when it exits rather than leave a zombie.
func TestReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("a PID namespace needs root: make test runs as root")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Fatal("nsenter (util-linux) is not installed")
	}
	cmd := pauseCommand(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting pause in a PID namespace: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid

	// sh exits at once; its child sleep is orphaned, adopted by pause, and exits a
	// second later. Its output goes elsewhere, or CombinedOutput would wait for it.
	orphan := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--pid", "--", "sh", "-c", "sleep 1 >/dev/null 2>&1 &")
	if out, err := orphan.CombinedOutput(); err != nil {
		t.Fatalf("orphaning a process in pause's namespace: %v: %s", err, out)
	}
	if got := children(t, pid); len(got) != 1 || got[0] == 'Z' {
		t.Fatalf("children of pause after the orphaning: states %q, want one running", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := children(t, pid)
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children of pause 5 s after the orphan's exit: states %q, want none (Z is a zombie)", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("pause as PID 1 after SIGTERM: %v, want exit status 0", err)
	}
}

// children returns the state letters (R, S, Z, ...) of the processes whose parent is
// ppid, read from /proc.
func children(t *testing.T, ppid int) string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var states []byte
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // exited since the glob
		}
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) >= 2 && fields[1] == strconv.Itoa(ppid) {
			states = append(states, fields[0][0])
		}
	}
	return string(states)
}
