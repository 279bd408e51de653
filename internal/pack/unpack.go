package pack

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Unpack extracts the tar.gz read from r into dir, creating dir if needed. Entries that
// would land outside dir are refused: absolute paths, ".." components, symbolic links
// whose target leads outside dir, and paths through such links (all file operations
// go through an os.Root). Existing files are replaced. Modification times are not
// restored: the files are new to this machine. An archive past one of lim's caps is
// refused with a *LimitError before the entry that would pass it is written.
func Unpack(r io.Reader, dir string, lim Limits) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	defer root.Close()
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	u := unpacker{root: root, realDir: realDir, lim: lim.withDefaults()}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("unpacking into %s: %w", dir, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpacking into %s: %w", dir, err)
		}
		if err := u.count(hdr); err != nil {
			return fmt.Errorf("unpacking %q into %s: %w", hdr.Name, dir, err)
		}
		if err := u.extract(hdr, tr); err != nil {
			return fmt.Errorf("unpacking %q into %s: %w", hdr.Name, dir, err)
		}
	}
}

// unpacker extracts entries under one directory.
type unpacker struct {
	// root confines every file operation to the directory.
	root *os.Root
	// realDir is the directory's path with symbolic links resolved.
	realDir string
	// lim caps what the archive may unpack to; entries and bytes count against it.
	lim            Limits
	entries, bytes int64
}

// extract creates one entry.
func (u *unpacker) extract(hdr *tar.Header, r io.Reader) error {
	root := u.root
	name := strings.TrimSuffix(hdr.Name, "/")
	if name == "" || name == "." {
		return nil
	}
	if path.IsAbs(name) || !filepath.IsLocal(filepath.FromSlash(name)) {
		return errors.New("refusing a path that leads outside the directory")
	}
	name = filepath.FromSlash(name)
	if parent := filepath.Dir(name); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeReg:
		if err := removeNonDir(root, name); err != nil {
			return err
		}
		perm := fs.FileMode(0o644)
		if hdr.Mode&0o111 != 0 {
			perm = 0o755
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		if err := u.checkLink(name, hdr.Linkname); err != nil {
			return err
		}
		if err := removeNonDir(root, name); err != nil {
			return err
		}
		return root.Symlink(hdr.Linkname, name)
	default:
		return fmt.Errorf("refusing an entry of unsupported type %q", hdr.Typeflag)
	}
}

// removeNonDir removes a file or link about to be replaced; a directory in the way is
// an error.
func removeNonDir(root *os.Root, name string) error {
	st, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errors.New("a directory is in the way")
	}
	return root.Remove(name)
}

// checkLink refuses a symbolic link at name whose target leads outside the directory.
// The target must be relative and clean (".." only as leading components), and is
// judged from the link's real parent directory: with links among its ancestors, the
// link's lexical location may differ from where it really is.
func (u *unpacker) checkLink(name, target string) error {
	refuse := fmt.Errorf("refusing a symbolic link to %q: it leads outside the directory", target)
	if target == "" || path.IsAbs(target) || path.Clean(target) != target {
		return refuse
	}
	realParent, err := filepath.EvalSymlinks(filepath.Join(u.root.Name(), filepath.Dir(name)))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(u.realDir, filepath.Join(realParent, filepath.FromSlash(target)))
	if err != nil || !filepath.IsLocal(rel) {
		return refuse
	}
	return nil
}
