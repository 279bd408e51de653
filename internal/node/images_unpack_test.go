package node

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
)

// entry is one entry of a crafted layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
	uid, gid         int
}

// tarOf is a layer's uncompressed tar stream.
func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, Uid: e.uid, Gid: e.gid, ModTime: time.Unix(1700000000, 0)}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)[:hdr.Size]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func reg(name, body string) entry { return entry{name: name, body: body, typ: tar.TypeReg} }
func dirEntry(name string) entry  { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }

// tree lists root as "path" for directories, "path=body" for files and
// "path->target" for symlinks.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+"->"+target)
		case fi.IsDir():
			out = append(out, rel+"/")
		default:
			data, _ := os.ReadFile(p)
			out = append(out, rel+"="+string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestExtractLayersWithWhiteouts(t *testing.T) {
	root := t.TempDir()
	layers := [][]byte{
		tarOf(t, dirEntry("etc/"), reg("etc/keep", "1"), reg("etc/gone", "2"), dirEntry("opt/"), reg("opt/old", "3"),
			dirEntry("opt/deep/"), reg("opt/deep/x", "4"), entry{name: "lib", typ: tar.TypeSymlink, link: "usr/lib"},
			dirEntry("usr/"), dirEntry("usr/lib/"), reg("usr/lib/a", "5"), dirEntry("tree/"), reg("tree/f", "6")),
		// The opaque marker after a new entry of the same layer spares it.
		tarOf(t, reg("etc/.wh.gone", ""), reg("opt/new", "7"), reg("opt/.wh..wh..opq", ""),
			reg("lib/b", "8"), reg(".wh.tree", ""), reg("etc/keep", "replaced")),
	}
	for _, l := range layers {
		if err := extractLayer(root, bytes.NewReader(l)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"etc/", "etc/keep=replaced", "lib->usr/lib", "opt/", "opt/new=7", "usr/", "usr/lib/", "usr/lib/a=5", "usr/lib/b=8"}
	if diff := cmp.Diff(want, tree(t, root)); diff != "" {
		t.Errorf("unpacked root (-want +got):\n%s", diff)
	}
}

func TestExtractKeepsMetadata(t *testing.T) {
	root := t.TempDir()
	layer := tarOf(t,
		entry{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "bin/su", body: "x", typ: tar.TypeReg, mode: 0o4755, uid: 0, gid: 0},
		entry{name: "home/", typ: tar.TypeDir, mode: 0o755},
		entry{name: "home/app/", typ: tar.TypeDir, mode: 0o700, uid: 1234, gid: 2345},
		entry{name: "home/app/f", body: "data", typ: tar.TypeReg, mode: 0o640, uid: 1234, gid: 2345},
		entry{name: "home/app/hard", typ: tar.TypeLink, link: "home/app/f"},
		entry{name: "fifo", typ: tar.TypeFifo, mode: 0o600},
		entry{name: "null", typ: tar.TypeChar, mode: 0o666},
	)
	if err := extractLayer(root, bytes.NewReader(layer)); err != nil {
		t.Fatal(err)
	}
	stat := func(p string) *syscall.Stat_t {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(root, p), &st); err != nil {
			t.Fatal(err)
		}
		return &st
	}
	checks := []struct {
		path     string
		mode     uint32
		uid, gid uint32
	}{
		{"bin/su", syscall.S_IFREG | 0o4755, 0, 0},
		{"home/app", syscall.S_IFDIR | 0o700, 1234, 2345},
		{"home/app/f", syscall.S_IFREG | 0o640, 1234, 2345},
		{"fifo", syscall.S_IFIFO | 0o600, 0, 0},
		{"null", syscall.S_IFCHR | 0o666, 0, 0},
	}
	for _, c := range checks {
		st := stat(c.path)
		if st.Mode != c.mode || st.Uid != c.uid || st.Gid != c.gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", c.path, st.Mode, st.Uid, st.Gid, c.mode, c.uid, c.gid)
		}
	}
	if stat("home/app/hard").Ino != stat("home/app/f").Ino {
		t.Error("the hard link is not the same inode as its target")
	}
	if mt := stat("home/app/f").Mtim.Sec; mt != 1700000000 {
		t.Errorf("mtime %d, want the entry's", mt)
	}
}

// TestExtractStaysInTheRoot: entries that climb out of the root are refused, and
// writes through a symlink to an absolute or climbing target land inside the root.
func TestExtractStaysInTheRoot(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		layer []entry
	}{
		{"dot-dot entry", []entry{reg("../escape", "x")}},
		{"dot-dot inside", []entry{dirEntry("a/"), reg("a/../../escape", "x")}},
		{"hard link out", []entry{{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := extractLayer(t.TempDir(), bytes.NewReader(tarOf(t, tc.layer...))); err == nil || !strings.Contains(err.Error(), "outside the image root") {
				t.Errorf("error %v, want the entry refused", err)
			}
		})
	}
	root := t.TempDir()
	layer := tarOf(t, entry{name: "abs", typ: tar.TypeSymlink, link: outside}, reg("abs/planted", "x"),
		entry{name: "up", typ: tar.TypeSymlink, link: "../../../.."}, reg("up/"+strings.TrimPrefix(outside, "/")+"/planted2", "y"))
	if err := extractLayer(root, bytes.NewReader(layer)); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(outside); len(left) > 0 {
		t.Errorf("a layer wrote outside the root: %v", left)
	}
	if _, err := os.Stat(filepath.Join(root, outside, "planted")); err != nil {
		t.Errorf("the write through the absolute symlink is not inside the root: %v", err)
	}
}

func TestDecompress(t *testing.T) {
	plain := tarOf(t, reg("f", "content"))
	var gz, zs bytes.Buffer
	gw := pgzip.NewWriter(&gz)
	gw.Write(plain)
	gw.Close()
	zw, _ := zstd.NewWriter(&zs)
	zw.Write(plain)
	zw.Close()
	for name, data := range map[string][]byte{"plain": plain, "gzip": gz.Bytes(), "zstd": zs.Bytes()} {
		t.Run(name, func(t *testing.T) {
			r, err := decompress(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			root := t.TempDir()
			if err := extractLayer(root, r); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"f=content"}, tree(t, root)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
