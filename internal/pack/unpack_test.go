package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	closeArchive(t, tw, gz)
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
			err := Unpack(tarGz(t, tc.hdrs...), dst, Limits{})
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

// closeArchive ends the tar stream, then the gzip stream.
func closeArchive(t *testing.T, tw *tar.Writer, gz *gzip.Writer) {
	t.Helper()
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// bomb is a tar.gz of one file of size zero bytes: gzip shrinks it about a
// thousandfold, as an attacker's archive would. Without data, the archive ends after
// the file's header: enough for a test that Unpack refuses the header.
func bomb(t *testing.T, size int64, data bool) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: size}); err != nil {
		t.Fatal(err)
	}
	if !data {
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
		return &buf
	}
	if _, err := io.CopyN(tw, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	closeArchive(t, tw, gz)
	return &buf
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// dirSize is the sum of the sizes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		st, err := d.Info()
		n += st.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUnpackCaps: an archive past a cap is refused with a LimitError naming it, and
// what was written stays within the cap; one at the cap unpacks.
func TestUnpackCaps(t *testing.T) {
	many := make([]tar.Header, 0, 11)
	for i := range 11 {
		many = append(many, file(fmt.Sprintf("f%02d", i)))
	}
	tests := []struct {
		name    string
		archive func() *bytes.Buffer
		lim     Limits
		wantErr *LimitError
	}{
		{name: "64 MiB of zeros past a 1 MiB cap", archive: func() *bytes.Buffer { return bomb(t, 64<<20, true) }, lim: Limits{MaxBytes: 1 << 20},
			wantErr: &LimitError{Cap: CapBytes, Limit: 1 << 20}},
		{name: "exactly at the byte cap", archive: func() *bytes.Buffer { return bomb(t, 1<<20, true) }, lim: Limits{MaxBytes: 1 << 20}},
		{name: "files adding up past the byte cap", archive: func() *bytes.Buffer { return tarGz(t, many...) }, lim: Limits{MaxBytes: 30},
			wantErr: &LimitError{Cap: CapBytes, Limit: 30}},
		{name: "11 entries past a cap of 10", archive: func() *bytes.Buffer { return tarGz(t, many...) }, lim: Limits{MaxEntries: 10},
			wantErr: &LimitError{Cap: CapEntries, Limit: 10}},
		{name: "directories and links count as entries", lim: Limits{MaxEntries: 2},
			archive: func() *bytes.Buffer { return tarGz(t, dir("d/"), link("d/l", "x"), file("d/x")) },
			wantErr: &LimitError{Cap: CapEntries, Limit: 2}},
		{name: "11 entries at a cap of 11", archive: func() *bytes.Buffer { return tarGz(t, many...) }, lim: Limits{MaxEntries: 11}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "workspace")
			err := Unpack(tc.archive(), dst, tc.lim)
			var got *LimitError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Unpack: %v, want a LimitError or nil", err)
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("LimitError (-want +got):\n%s\n(error: %v)", diff, err)
			}
			if got != nil && !strings.Contains(err.Error(), fmt.Sprintf("more than %d", got.Limit)) {
				t.Errorf("error %q does not name the cap", err)
			}
			if max := tc.lim.withDefaults().MaxBytes; dirSize(t, dst) > max {
				t.Errorf("%d bytes written, past the cap of %d", dirSize(t, dst), max)
			}
		})
	}
}

// TestUnpackDefaultCaps: with no caps given, a file whose header announces 5 GiB (5
// GiB of zeros gzip to about 5 MB) stops at the default cap before it is written.
func TestUnpackDefaultCaps(t *testing.T) {
	if DefaultMaxBytes >= 5<<30 {
		t.Fatalf("DefaultMaxBytes %d: the bomb below no longer passes it", DefaultMaxBytes)
	}
	dst := filepath.Join(t.TempDir(), "workspace")
	err := Unpack(bomb(t, 5<<30, false), dst, Limits{})
	var le *LimitError
	if !errors.As(err, &le) || le.Cap != CapBytes || le.Limit != DefaultMaxBytes {
		t.Fatalf("Unpack: %v, want the default byte cap", err)
	}
	if n := dirSize(t, dst); n != 0 {
		t.Errorf("%d bytes written, want none", n)
	}
}
