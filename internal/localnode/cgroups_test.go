package localnode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreateCgroupIn: every level of the node's cgroup is made, a v1 cpuset level
// taking its parent's CPUs and memory nodes; a level that exists already is kept.
func TestCreateCgroupIn(t *testing.T) {
	h := t.TempDir()
	for name, value := range map[string]string{"cpuset.cpus": "0-1\n", "cpuset.mems": "0\n"} {
		if err := os.WriteFile(filepath.Join(h, name), []byte(value), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(h, "tfk8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A new cpuset's files exist and are empty, as the kernel makes them.
	for _, name := range []string{"cpuset.cpus", "cpuset.mems"} {
		if err := os.WriteFile(filepath.Join(h, "tfk8s", name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := createCgroupIn(h, "/tfk8s/node-a/system"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h, "tfk8s", "node-a", "system")); err != nil {
		t.Errorf("the node's system cgroup was not made: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(h, "tfk8s", "cpuset.cpus"))
	if string(got) != "0-1\n" {
		t.Errorf("the existing level's cpuset.cpus = %q, want the parent's %q", got, "0-1\n")
	}
}
