package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/gzip"
)

// entry is what a test compares of a tar header.
type entry struct {
	Name, Linkname string
	Type           byte
	Mode           int64
	Size           int64
	ModTime        time.Time
}

// makeTree writes a small root file system under dir, its files' times set to mtime.
func makeTree(t *testing.T, dir string, mtime time.Time) {
	t.Helper()
	for _, d := range []string{"usr/bin", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"usr/bin/python3": "#!elf", "etc/os-release": "bookworm\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "usr/bin/python3"), filepath.Join(dir, "usr/bin/python3.11")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("python3", filepath.Join(dir, "usr/bin/python")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"usr/bin/python3", "etc/os-release", "usr/bin", "usr", "etc"} {
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// readEntries is the tar inside the gzipped layer at path.
func readEntries(t *testing.T, path string) []entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []entry
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{hdr.Name, hdr.Linkname, hdr.Typeflag, hdr.Mode, hdr.Size, hdr.ModTime.UTC()})
	}
}

func TestWriteLayerIsDeterministic(t *testing.T) {
	tmp := t.TempDir()
	var layers []*layerFile
	for i, mtime := range []time.Time{time.Unix(1e9, 0), time.Unix(1.7e9, 0)} {
		dir := filepath.Join(tmp, "root", string(rune('a'+i)))
		makeTree(t, dir, mtime)
		l, err := writeLayer(dir, filepath.Join(tmp, string(rune('a'+i))+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	if layers[0].Sum != layers[1].Sum || layers[0].Diff != layers[1].Diff {
		t.Errorf("the same tree with other times gave other layers: %v and %v", layers[0], layers[1])
	}

	want := []entry{
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "etc/os-release", Type: tar.TypeReg, Mode: 0o755, Size: 9, ModTime: epoch},
		{Name: "usr/", Type: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "usr/bin/", Type: tar.TypeDir, Mode: 0o755, ModTime: epoch},
		{Name: "usr/bin/python", Linkname: "python3", Type: tar.TypeSymlink, Mode: 0o777, ModTime: epoch},
		{Name: "usr/bin/python3", Type: tar.TypeReg, Mode: 0o755, Size: 5, ModTime: epoch},
		{Name: "usr/bin/python3.11", Linkname: "usr/bin/python3", Type: tar.TypeLink, Mode: 0o755, ModTime: epoch},
	}
	if diff := cmp.Diff(want, readEntries(t, layers[0].Path)); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}

	cached := readLayer(layers[0].Path)
	if diff := cmp.Diff(layers[0], cached); diff != "" {
		t.Errorf("readLayer (-want +got):\n%s", diff)
	}
}

func TestMirrorIn(t *testing.T) {
	tests := []struct {
		name, sources, want string
	}{
		{"one-line", "deb http://mirror.example/debian bookworm main\n", "http://mirror.example/debian"},
		{"one-line with options", "deb [arch=amd64] http://other/debian bookworm main\n", ""},
		{"deb822", "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n", "http://deb.debian.org/debian"},
		{"deb822, security only", "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n", ""},
		{"another suite", "deb http://archive.ubuntu.com/ubuntu noble main\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sources")
			if err := os.WriteFile(path, []byte(tc.sources), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := mirrorIn(path); got != tc.want {
				t.Errorf("mirrorIn = %q, want %q", got, tc.want)
			}
		})
	}
}
