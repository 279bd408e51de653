package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDetachedProcessLifecycle(t *testing.T) {
	dir := t.TempDir()
	p, err := StartDetached("sleeper", "/bin/sleep", []string{"60"}, []string{"A=1"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })

	found := FindDetached(dir, "sleeper")
	if found == nil || found.Pid() != p.Pid() {
		t.Fatalf("FindDetached = %v, want pid %d", found, p.Pid())
	}
	if found.Exited() {
		t.Error("a found running process reports it exited")
	}
	log, err := os.ReadFile(filepath.Join(dir, "sleeper.log"))
	if err != nil || !strings.Contains(string(log), "starting /bin/sleep 60") {
		t.Errorf("log = %q, %v; want the start recorded", log, err)
	}
	// Another process's view: a new session, so a Ctrl-C in the caller's terminal
	// does not reach it.
	if sid, err := exec.Command("ps", "-o", "sid=", "-p", strconv.Itoa(p.Pid())).Output(); err == nil && strings.TrimSpace(string(sid)) != strconv.Itoa(p.Pid()) {
		t.Errorf("session id %s, want the process's own %d", strings.TrimSpace(string(sid)), p.Pid())
	}

	if err := StopDetached(dir, "sleeper", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// StopDetached, as another process would, waited for the pid to end; this
	// process, its parent, reaps it a moment later.
	if !eventually(p.Exited) {
		t.Error("the process runs after StopDetached")
	}
	if _, err := os.Stat(filepath.Join(dir, "sleeper.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file after stopping: %v, want it removed", err)
	}
	if FindDetached(dir, "sleeper") != nil {
		t.Error("FindDetached found a stopped process")
	}
	if err := StopDetached(dir, "sleeper", time.Second); err != nil {
		t.Errorf("stopping a stopped process: %v", err)
	}
}

func TestStopDetachedKillsWhatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	p, err := StartDetached("stubborn", "/bin/sh", []string{"-c", "trap '' TERM; sleep 60 & echo child $!; wait"}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	child := childPid(t, p) // the shell has set its trap
	start := time.Now()
	if err := StopDetached(dir, "stubborn", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !eventually(p.Exited) {
		t.Error("the process survived StopDetached")
	}
	if !eventually(func() bool { return !pidRuns(child, "sleep") }) {
		t.Errorf("its child %d survived StopDetached", child)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopping took %v", d)
	}
}

func TestFindDetachedIgnoresRecycledPids(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"a live pid running another program", strconv.Itoa(os.Getpid()) + "\n/usr/bin/etcd\n"},
		{"no executable recorded", strconv.Itoa(os.Getpid()) + "\n"},
		{"a dead pid", "999999999\n/bin/sleep\n"},
		{"garbage", "not a pid\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "etcd.pid"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if p := FindDetached(dir, "etcd"); p != nil {
				t.Errorf("FindDetached = pid %d, want none", p.Pid())
			}
			if err := StopDetached(dir, "etcd", time.Second); err != nil {
				t.Errorf("StopDetached: %v", err)
			}
		})
	}
}
