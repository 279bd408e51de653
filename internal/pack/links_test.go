package pack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPackRefusesLinksLeavingTheDirectory packs trees with symbolic links: those that
// stay inside the directory are packed as before, and the first one that leaves it is
// refused, named with its target, before anything is written.
func TestPackRefusesLinksLeavingTheDirectory(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"config": "secret"})
	placeOutside := func(target string) string { return strings.Replace(filepath.FromSlash(target), "OUT", outside, 1) }
	tests := []struct {
		name  string
		files map[string]string
		// links are link name → target; "OUT" in a target stands for the outside
		// directory.
		links map[string]string
		// wantLink is the refused link, "" if the tree packs.
		wantLink, wantTarget string
	}{
		{
			name:  "links inside: to a file, a directory, through another link, dangling",
			files: map[string]string{"lib/model.py": "M = 1\n", "train.py": ""},
			links: map[string]string{"model.py": "lib/model.py", "l": "lib", "m": "model.py", "lib/up": "../train.py", "gone": "lib/missing"},
		},
		{
			name:     "absolute link to a file outside",
			files:    map[string]string{"train.py": ""},
			links:    map[string]string{"x": "OUT/config"},
			wantLink: "x", wantTarget: "OUT/config",
		},
		{
			name:     "relative link climbing out",
			files:    map[string]string{"a/b.py": ""},
			links:    map[string]string{"a/up": "../.."},
			wantLink: "a/up", wantTarget: "../..",
		},
		{
			name:     "a link inside that leads to one leaving",
			files:    map[string]string{"train.py": ""},
			links:    map[string]string{"a": "b", "b": "OUT/config"},
			wantLink: "a", wantTarget: "b",
		},
		{
			name:     "dangling link outside",
			files:    map[string]string{"train.py": ""},
			links:    map[string]string{"x": "OUT/missing"},
			wantLink: "x", wantTarget: "OUT/missing",
		},
		{
			name:  "an ignored link is not packed, and not judged",
			files: map[string]string{"train.py": "", ".tfk8signore": "x\n"},
			links: map[string]string{"x": "OUT/config"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			for name, target := range tc.links {
				if err := os.Symlink(placeOutside(target), filepath.Join(dir, filepath.FromSlash(name))); err != nil {
					t.Fatal(err)
				}
			}
			a, err := Pack(dir, t.TempDir())
			if tc.wantLink == "" {
				if err != nil {
					t.Fatalf("Pack: %v", err)
				}
				_ = a.Remove()
				return
			}
			if err == nil {
				_ = a.Remove()
				t.Fatalf("Pack packed a tree with %s leaving it", tc.wantLink)
			}
			var escaping *EscapingLinkError
			if !errors.As(err, &escaping) {
				t.Fatalf("Pack: %v, want an *EscapingLinkError", err)
			}
			want := EscapingLinkError{Link: filepath.Join(dir, tc.wantLink), Target: placeOutside(tc.wantTarget), Dir: dir}
			if diff := cmp.Diff(want, *escaping); diff != "" {
				t.Errorf("refused link (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}
