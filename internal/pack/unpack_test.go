package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarGz builds an archive from headers; regular files get their name as content.
func tarGz(t *testing.T, hdrs ...tar.Header) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		h := h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(h.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func file(name string) tar.Header { return tar.Header{Name: name, Typeflag: tar.TypeReg} }
func dir(name string) tar.Header  { return tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755} }
func link(name, target string) tar.Header {
	return tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
}

func TestUnpackRefusesTraversal(t *testing.T) {
	tests := []struct {
		name    string
		hdrs    []tar.Header
		wantErr string
	}{
		{name: "dot-dot file", hdrs: []tar.Header{file("../evil")}, wantErr: "leads outside"},
		{name: "dot-dot in the middle", hdrs: []tar.Header{file("a/../../evil")}, wantErr: "leads outside"},
		{name: "absolute path", hdrs: []tar.Header{file("/tmp/evil")}, wantErr: "leads outside"},
		{name: "absolute symlink", hdrs: []tar.Header{link("etc", "/etc")}, wantErr: `symbolic link to "/etc"`},
		{name: "escaping symlink", hdrs: []tar.Header{link("up", "../..")}, wantErr: "symbolic link"},
		{name: "escaping symlink from a subdirectory", hdrs: []tar.Header{dir("a/"), link("a/up", "../../x")}, wantErr: "symbolic link"},
		{name: "unclean symlink target", hdrs: []tar.Header{link("l", "a/../../x")}, wantErr: "symbolic link"},
		{
			name:    "link judged from its real parent directory stays inside",
			hdrs:    []tar.Header{dir("a/"), link("a/self", "."), link("a/self/up", "..")},
			wantErr: "",
		},
		{
			name:    "escape through a link to the parent of its directory",
			hdrs:    []tar.Header{dir("a/"), link("a/s", "."), link("a/s/x", "../..")},
			wantErr: "symbolic link",
		},
		{
			name:    "write through an escaping link",
			hdrs:    []tar.Header{dir("d/"), link("d/out", ".."), file("d/out/../../evil")},
			wantErr: "path escapes from parent",
		},
		{name: "hard link", hdrs: []tar.Header{file("a"), {Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}, wantErr: "unsupported type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "workspace")
			err := Unpack(tarGz(t, tc.hdrs...), dst)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Unpack error = %v, want one containing %q", err, tc.wantErr)
			}
			if _, err := os.Lstat(filepath.Join(parent, "evil")); err == nil {
				t.Error("a file was written outside the directory")
			}
			// Whatever was created must resolve inside the directory.
			_ = filepath.Walk(dst, func(p string, _ os.FileInfo, _ error) error {
				real, err := filepath.EvalSymlinks(p)
				if err == nil && !strings.HasPrefix(real+"/", dst+"/") {
					t.Errorf("%s resolves to %s, outside %s", p, real, dst)
				}
				return nil
			})
		})
	}
}
