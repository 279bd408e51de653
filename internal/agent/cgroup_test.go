package agent

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fixtures under testdata/cgroup are laid out as the kernel's cgroup-v1 (memory,
// cpuacct) and cgroup-v2 docs give the files: self-cgroup is /proc/self/cgroup, sys
// the /sys/fs/cgroup mount.
func TestCgroupRead(t *testing.T) {
	tests := []struct {
		fixture string
		version int
		want    cgroupSample
	}{{
		// A hybrid host's v1 hierarchies, seen from the host: the path is under the
		// mount. 400 MiB charged, 100 MiB of it inactive page cache.
		fixture: "v1", version: 1,
		want: cgroupSample{cpuSeconds: 2.5, workingSet: 300 << 20, highWater: 500 << 20, limit: 512 << 20, oomKills: 1},
	}, {
		// Seen from a container, whose mount's root is its cgroup; no limit, and a
		// kernel that does not count OOM kills.
		fixture: "v1-container", version: 1,
		want: cgroupSample{cpuSeconds: 1, workingSet: 1 << 20, highWater: 2 << 20},
	}, {
		fixture: "v2", version: 2,
		want: cgroupSample{cpuSeconds: 3.75, workingSet: 296 << 20, highWater: 330 << 20, limit: 256 << 20, oomKills: 2},
	}, {
		// A host's view, no limit ("max"), a kernel without memory.peak.
		fixture: "v2-host", version: 2,
		want: cgroupSample{cpuSeconds: 0.5, workingSet: 4 << 20},
	}}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := filepath.Join("testdata", "cgroup", tt.fixture)
			r, err := findCgroup(filepath.Join(dir, "self-cgroup"), filepath.Join(dir, "sys"))
			if err != nil {
				t.Fatal(err)
			}
			if r.version != tt.version {
				t.Errorf("version %d, want %d", r.version, tt.version)
			}
			got, err := r.read()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(cgroupSample{})); diff != "" {
				t.Errorf("sample (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindCgroupWithoutMemory(t *testing.T) {
	dir := filepath.Join("testdata", "cgroup", "none")
	_, err := findCgroup(filepath.Join(dir, "self-cgroup"), filepath.Join(dir, "sys"))
	if err == nil || !strings.Contains(err.Error(), "names no memory cgroup") {
		t.Fatalf("got %v, want an error saying the file names no memory cgroup", err)
	}
}

// The machine's own cgroup reads: the path the agent takes in a real container.
func TestCgroupReadsThisMachine(t *testing.T) {
	r, err := findCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	if s.cpuSeconds <= 0 || s.workingSet <= 0 {
		t.Errorf("%s: %+v, want CPU time and a working set", r.source(), s)
	}
}
