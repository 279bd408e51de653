package safewrite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlantedSymlinks plants symlinks where root writes and checks that the file
// they point at keeps its content, while the path gets the new data.
func TestPlantedSymlinks(t *testing.T) {
	tests := []struct {
		name  string
		plant func(dir, victim string) error
	}{{
		name:  "a symlink at the path itself",
		plant: func(dir, victim string) error { return os.Symlink(victim, filepath.Join(dir, "config")) },
	}, {
		name:  "a symlink at the former temporary name",
		plant: func(dir, victim string) error { return os.Symlink(victim, filepath.Join(dir, "config.tmp")) },
	}, {
		name: "a dangling symlink at the path",
		plant: func(dir, _ string) error {
			return os.Symlink(filepath.Join(dir, "absent"), filepath.Join(dir, "config"))
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, victim := t.TempDir(), filepath.Join(t.TempDir(), "shadow")
			if err := os.WriteFile(victim, []byte("root:secret\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			if err := tc.plant(dir, victim); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config")
			if err := File(path, []byte("endpoint: x\n"), 0o600); err != nil {
				t.Fatalf("File: %v", err)
			}
			got, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("root:secret\n", string(got)); diff != "" {
				t.Errorf("the symlink's target was written (-want +got):\n%s", diff)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s is %v, want a regular file of mode 0600", path, fi.Mode())
			}
			if _, err := os.Stat(filepath.Join(dir, "absent")); !os.IsNotExist(err) {
				t.Errorf("the dangling symlink's target was created: %v", err)
			}
		})
	}
}

// TestOwned checks that the file gets its owner and its exact mode, whatever the
// umask, and that no temporary file is left.
func TestOwned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("giving a file to another user needs root: run as root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	if err := Owned(path, []byte("a\n"), 0o640, 4242, 4343); err != nil {
		t.Fatalf("Owned: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	type owner struct {
		UID, GID uint32
		Mode     os.FileMode
	}
	if diff := cmp.Diff(owner{4242, 4343, 0o640}, owner{st.Uid, st.Gid, fi.Mode().Perm()}); diff != "" {
		t.Errorf("owner and mode (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want config alone", len(entries))
	}
}
