package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGroupStops(t *testing.T) {
	tests := []struct {
		name        string
		stop        func(g *Group)
		wantStopped []string
	}{
		{
			name:        "StopStarted: the named order first, then the rest newest first, adopted ones left",
			stop:        func(g *Group) { g.StopStarted(func(string) time.Duration { return 5 * time.Second }, "c", "a") },
			wantStopped: []string{"c", "a", "b"},
		},
		{
			name:        "StopStarted without an order: newest first",
			stop:        func(g *Group) { g.StopStarted(func(string) time.Duration { return 5 * time.Second }) },
			wantStopped: []string{"c", "b", "a"},
		},
		{
			name:        "Stop: everything, newest first",
			stop:        func(g *Group) { g.Stop(5 * time.Second) },
			wantStopped: []string{"d", "c", "b", "a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "stopped")
			g := &Group{}
			procs := map[string]*Process{}
			for _, name := range []string{"a", "b", "c", "d"} {
				p := startRecorder(t, dir, name, record)
				procs[name] = p
				if name == "d" {
					g.Adopt(p)
				} else {
					g.Add(p)
				}
			}
			if g.Find("b") != procs["b"] || g.Find("d") != procs["d"] || g.Find("e") != nil {
				t.Error("Find does not return the process of each name, and nil for none")
			}
			if !g.Adopted("d") || g.Adopted("a") {
				t.Errorf("Adopted(d), Adopted(a) = %v, %v; want true, false", g.Adopted("d"), g.Adopted("a"))
			}
			tc.stop(g)
			data, _ := os.ReadFile(record)
			if diff := cmp.Diff(tc.wantStopped, strings.Fields(string(data))); diff != "" {
				t.Errorf("stopped (-want +got):\n%s", diff)
			}
			for name, p := range procs {
				if want := strings.Contains(strings.Join(tc.wantStopped, ""), name); p.Exited() != want {
					t.Errorf("%s exited = %v, want %v", name, p.Exited(), want)
				}
			}
		})
	}
}

func TestGroupCheck(t *testing.T) {
	dir := t.TempDir()
	g := &Group{}
	t.Cleanup(func() { g.Stop(0) })
	sleeper, err := Start("sleeper", "/bin/sleep", []string{"60"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Add(sleeper)
	if err := g.Check(); err != nil {
		t.Errorf("Check with every process running = %v", err)
	}
	failer, err := Start("failer", "/bin/sh", []string{"-c", "exit 3"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.Add(failer)
	<-failer.Done()
	if err := g.Check(); err == nil || !strings.Contains(err.Error(), "failer exited (exit status 3)") {
		t.Errorf("Check = %v, want failer's exit", err)
	}
}

func TestRunSteps(t *testing.T) {
	var ran []string
	step := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			ran = append(ran, name)
			return err
		}
	}
	undone := 0
	undo := func() { undone++ }
	failure := errors.New("no room")
	err := RunSteps(context.Background(), undo, step("network", nil), step("etcd", failure), step("apiserver", nil))
	if !errors.Is(err, failure) || undone != 1 {
		t.Errorf("RunSteps = %v, undo called %d times; want %v and once", err, undone, failure)
	}
	if diff := cmp.Diff([]string{"network", "etcd"}, ran); diff != "" {
		t.Errorf("steps run (-want +got):\n%s", diff)
	}
	ran, undone = nil, 0
	if err := RunSteps(context.Background(), undo, step("network", nil), step("etcd", nil)); err != nil || undone != 0 {
		t.Errorf("RunSteps = %v, undo called %d times; want nil and never", err, undone)
	}
}

// startRecorder starts a process, in a group of its own, that appends its name to
// record when SIGTERM reaches it, and waits until it is ready to.
func startRecorder(t *testing.T, dir, name, record string) *Process {
	t.Helper()
	script := "trap 'echo " + name + " >> " + record + "; exit 0' TERM; sleep 60 & echo child $!; wait"
	p, err := Start(name, "/bin/sh", []string{"-c", script}, dir, Options{OwnGroup: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	childPid(t, p)
	return p
}
