package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "locked")
	if err := os.Mkdir(unreadable, 0o000); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, want string
	}{
		{dir, ""},
		{filepath.Join(dir, "missing"), "DIR " + filepath.Join(dir, "missing") + ": stat " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{file, "DIR " + file + ": not a directory"},
	}
	if os.Geteuid() != 0 { // root reads any directory
		cases = append(cases, struct{ dir, want string }{unreadable, "DIR " + unreadable + ": open " + unreadable + ": permission denied"})
	}
	for _, tc := range cases {
		err := checkDir("DIR", tc.dir)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("checkDir(%s) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}
