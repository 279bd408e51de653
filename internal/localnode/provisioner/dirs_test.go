package provisioner

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChildName(t *testing.T) {
	cases := []struct {
		path, want string // want "" is a refusal
	}{
		{path: "/state/volumes/pvc-1", want: "pvc-1"},
		{path: "/state/volumes", want: ""},
		{path: "/state/volumes/", want: ""},
		{path: "/state/volumes/.", want: ""},
		{path: "/state/volumes/..", want: ""},
		{path: "/state/volumes/../etc", want: ""},
		{path: "/state/volumes/a/b", want: ""},
		{path: "/state/volumes-2/pvc-1", want: ""},
		{path: "/etc", want: ""},
		{path: "", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, err := childName("/state/volumes", tc.path)
			if got != tc.want || (err == nil) != (tc.want != "") {
				t.Errorf("childName(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

// TestMakeVolumeDir: the directory gets the owner and mode decided for it, setgid
// included, also when a retried provisioning finds it made.
func TestMakeVolumeDir(t *testing.T) {
	tests := []struct {
		name  string
		owner dirOwner
	}{
		{name: "the pods' fsGroup", owner: dirOwner{GID: 2000, Mode: sharedMode}},
		{name: "no fsGroup: root's", owner: dirOwner{Mode: rootMode}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for range 2 { // The second call finds it made: a retried provisioning.
				path, err := makeVolumeDir(dir, "pvc-1", tc.owner)
				if err != nil {
					t.Fatal(err)
				}
				info, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				st := info.Sys().(*syscall.Stat_t)
				got := dirOwner{UID: int(st.Uid), GID: int(st.Gid), Mode: info.Mode() &^ fs.ModeDir}
				if path != filepath.Join(dir, "pvc-1") || !info.IsDir() {
					t.Errorf("made %s, a directory %t; want %s/pvc-1, a directory", path, info.IsDir(), dir)
				}
				if diff := cmp.Diff(tc.owner, got); diff != "" {
					t.Errorf("owner and mode (-want +got):\n%s", diff)
				}
			}
			if _, err := makeVolumeDir(dir, "../escape", tc.owner); err == nil {
				t.Errorf("made a directory out of %s", dir)
			}
		})
	}
}

// TestRemoveVolumeDir: a volume's directory goes with what it holds; a link in its place
// or in it goes, and what it points to outside stays; a path out of dir is refused.
func TestRemoveVolumeDir(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustMake := func(path string) {
		t.Helper()
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustLink := func(target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	mustMake(filepath.Join(dir, "full", "sub"))
	mustLink(outside, filepath.Join(dir, "full", "sub", "out"))
	mustLink(outside, filepath.Join(dir, "link"))
	for _, name := range []string{"full", "link", "gone"} {
		if err := removeVolumeDir(dir, filepath.Join(dir, name)); err != nil {
			t.Errorf("removing %s: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", name, err)
		}
	}
	if err := removeVolumeDir(filepath.Join(dir, "full"), outside); err == nil {
		t.Errorf("removed %s, out of the volume directory", outside)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious" {
		t.Errorf("the file outside is %q, %v; want it kept", b, err)
	}
	if err := removeVolumeDir(filepath.Join(dir, "none"), filepath.Join(dir, "none", "pvc-1")); err != nil {
		t.Errorf("removing a volume of a volume directory that is gone: %v", err)
	}
}
