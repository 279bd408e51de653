package proc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartAndStop(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("sleeper", "/bin/sleep", []string{"60"}, dir, Options{OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	if p.Exited() {
		t.Fatalf("the process exited at once: %v", p.ExitError())
	}
	if argv0, ok := pidArgv0(p.Pid()); !ok || argv0 != "/bin/sleep" {
		t.Errorf("pid %d runs %q (alive %v), want /bin/sleep", p.Pid(), argv0, ok)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !p.Exited() {
		t.Error("the process runs after Stop")
	}
	if p.Err() == nil || !strings.Contains(p.Err().Error(), "terminated") {
		t.Errorf("Err() = %v, want the process terminated by SIGTERM", p.Err())
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("stopping a stopped process: %v", err)
	}
}

// TestStopKillsTheGroup: a process that ignores SIGTERM is killed after the grace,
// and with it, as it runs in a group of its own, the child it started.
func TestStopKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	p, err := Start("stubborn", "/bin/sh", []string{"-c", "trap '' TERM; sleep 60 & echo child $!; wait"}, dir, Options{OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	child := childPid(t, p)
	start := time.Now()
	if err := p.Stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopping took %v", d)
	}
	if !eventually(func() bool { return !pidRuns(child, "sleep") }) {
		t.Errorf("the child %d survived its group's SIGKILL", child)
	}
}

// TestStartOptions: the environment is added to the caller's, the log is appended
// to across starts when asked, and the working directory is the one given.
func TestStartOptions(t *testing.T) {
	logDir, workDir := t.TempDir(), t.TempDir()
	for i := range 2 {
		p, err := Start("printer", "/bin/sh", []string{"-c", "echo $TFK8S_PROC_TEST $HOME; pwd"}, logDir,
			Options{Env: []string{"TFK8S_PROC_TEST=run" + strconv.Itoa(i)}, Dir: workDir, Append: true})
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if p.Err() != nil {
			t.Fatalf("run %d: %v", i, p.ExitError())
		}
	}
	log, err := os.ReadFile(filepath.Join(logDir, "printer.log"))
	if err != nil {
		t.Fatal(err)
	}
	home := os.Getenv("HOME")
	want := "run0 " + home + "\n" + workDir + "\nrun1 " + home + "\n" + workDir + "\n"
	if string(log) != want {
		t.Errorf("log = %q, want %q", log, want)
	}
}

func TestExitErrorShowsTheLog(t *testing.T) {
	p, err := Start("failer", "/bin/sh", []string{"-c", "echo first; echo last words; exit 3"}, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	msg := p.ExitError().Error()
	for _, want := range []string{"failer exited (exit status 3)", "first\nlast words"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ExitError() = %q, want it to contain %q", msg, want)
		}
	}
	if got := p.LogTail(1); got != "last words" {
		t.Errorf("LogTail(1) = %q, want the last line", got)
	}
}

func TestWaitAny(t *testing.T) {
	dir := t.TempDir()
	sleeper, err := Start("sleeper", "/bin/sleep", []string{"60"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Stop(0) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitAny(ctx, []*Process{sleeper}); err != nil {
		t.Errorf("WaitAny with its context over = %v, want nil", err)
	}
	failer, err := Start("failer", "/bin/sh", []string{"-c", "exit 3"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = WaitAny(context.Background(), []*Process{sleeper, failer})
	if err == nil || err.Error() != "failer exited: exit status 3" {
		t.Errorf("WaitAny = %v, want failer's exit", err)
	}
}

// childPid waits until p's log names the child it started, and returns its pid.
func childPid(t *testing.T, p *Process) int {
	t.Helper()
	var line string
	if !eventually(func() bool { line = p.LogTail(1); return strings.HasPrefix(line, "child ") }) {
		t.Fatalf("%s never named its child; log: %q", p.Name(), line)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "child "))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// eventually polls cond for five seconds.
func eventually(cond func() bool) bool {
	for range 500 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
