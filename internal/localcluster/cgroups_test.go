package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cgroupRoot writes a cgroup mount's root files under a temporary directory: none
// for a v1 or hybrid host, else cgroup.controllers and cgroup.subtree_control.
func cgroupRoot(t *testing.T, v2 bool, subtree string) string {
	t.Helper()
	dir := t.TempDir()
	if !v2 {
		return dir
	}
	for name, text := range map[string]string{"cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n", "cgroup.subtree_control": subtree} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckCgroups(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v2      bool
		subtree string
		want    string // a part of the error; "" for none
	}{
		{name: "v1 or hybrid host"},
		{name: "v2, as systemd leaves it", v2: true, subtree: "cpuset cpu io memory pids\n"},
		{name: "v2 without memory and pids", v2: true, subtree: "cpu io\n",
			want: `does not pass memory, pids to its child cgroups (its cgroup.subtree_control holds "cpu io")`},
		{name: "v2 with none", v2: true, subtree: "\n", want: `echo "+cpu +memory +pids" >`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCgroups(cgroupRoot(t, tc.v2, tc.subtree))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkCgroups: %v; want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkCgroups: %v; want an error with %q", err, tc.want)
			}
		})
	}
}
