package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack: whatever entries an archive holds (files, directories, symbolic and hard
// links, devices, with any names and targets, in any order), Unpack creates nothing
// outside its directory, changes no file there, and leaves no symbolic link whose
// target leads out of it.
//
// The input lists the entries one a line, as a kind letter (f file, d directory,
// l symbolic link, h hard link, c character device) and a name, "-> target" for
// links: a form the fuzzer can grow, which archive/tar then writes with valid
// checksums.
func FuzzUnpack(f *testing.F) {
	for _, s := range []string{
		"f a.txt\nd sub\nf sub/b.py",
		"f ../escape",
		"f /abs",
		"l up -> ..\nf up/escape",
		"l out -> ../outside\nf out/canary",
		"d a\nl a/b -> ..\nl a/b/c -> ../outside\nf a/b/c/canary",
		"l a -> .\nl a/b -> ../..\nf a/b/x",
		"l l -> sub\nd sub\nl l/x -> ../../outside",
		"h hard -> ../outside/canary",
		"c dev",
		"f x\nl x -> y\nd x\nf x/y",
		"l a -> b\nl b -> a\nf a/x",
		"l self -> self\nf self",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		archive, ok := fuzzArchive(spec)
		if !ok {
			return
		}
		base := t.TempDir()
		outside, dst := filepath.Join(base, "outside"), filepath.Join(base, "dst")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		canary := filepath.Join(outside, "canary")
		if err := os.WriteFile(canary, []byte("canary"), 0o644); err != nil {
			t.Fatal(err)
		}
		_ = Unpack(bytes.NewReader(archive), dst, Limits{}) // refusing is fine; escaping is not
		if data, err := os.ReadFile(canary); err != nil || string(data) != "canary" {
			t.Errorf("the file outside the directory now reads %q (%v)", data, err)
		}
		realDst, err := filepath.EvalSymlinks(dst)
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch {
			case p == base || p == outside || p == canary || p == dst:
				return nil
			case !strings.HasPrefix(p, dst+string(filepath.Separator)):
				t.Errorf("%s was made outside the directory", p)
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				parent, err := filepath.EvalSymlinks(filepath.Dir(p))
				if err != nil {
					return err
				}
				if rel, err := filepath.Rel(realDst, filepath.Join(parent, target)); err != nil || !filepath.IsLocal(rel) {
					t.Errorf("link %s -> %s leads outside the directory", p, target)
				}
			case !d.IsDir() && !d.Type().IsRegular():
				t.Errorf("%s is a %v", p, d.Type())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzArchive writes the entries spec lists as a tar.gz; false if archive/tar cannot
// write one of them.
func fuzzArchive(spec string) ([]byte, bool) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, line := range strings.Split(spec, "\n") {
		if len(line) < 3 || line[1] != ' ' {
			continue
		}
		name, target, _ := strings.Cut(line[2:], " -> ")
		hdr := &tar.Header{Name: name, Mode: 0o755, Format: tar.FormatPAX}
		switch line[0] {
		case 'f':
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(name))
		case 'd':
			hdr.Typeflag = tar.TypeDir
		case 'l':
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case 'h':
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, target
		case 'c':
			hdr.Typeflag = tar.TypeChar
		default:
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, false
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(name)); err != nil {
				return nil, false
			}
		}
	}
	if tw.Close() != nil || gz.Close() != nil {
		return nil, false
	}
	return buf.Bytes(), true
}
