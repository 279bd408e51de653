package node

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
	"golang.org/x/sys/unix"
)

// OCI whiteouts: a file named .wh.NAME deletes NAME of the lower layers; a file named
// .wh..wh..opq makes its directory opaque, hiding everything the lower layers put in it.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// decompress returns the tar stream of a layer blob, gzip, zstd or uncompressed.
func decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := pgzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading gzip layer: %w", err)
		}
		return zr, nil
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading zstd layer: %w", err)
		}
		return zr.IOReadCloser(), nil
	}
	return io.NopCloser(br), nil
}

// extractLayer applies one layer's tar stream onto root: entries replace what lower
// layers left at their path, whiteouts delete, and ownership, modes, times, extended
// attributes, symlinks, hardlinks and device files are kept. Paths resolve inside
// root, symlinks included; an entry naming a path outside it is refused.
func extractLayer(root string, r io.Reader) error {
	tr := tar.NewReader(r)
	// written are the paths this layer wrote: an opaque whiteout spares them.
	written := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading layer: %w", err)
		}
		rel, err := layerPath(hdr.Name)
		if err != nil {
			return err
		}
		if rel == "" {
			continue // the root itself
		}
		dir, base := path.Split(rel)
		parent, err := securejoin.SecureJoin(root, dir)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", hdr.Name, err)
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("creating the directory of %s: %w", hdr.Name, err)
		}
		switch {
		case base == opaqueWhiteout:
			err = clearDir(parent, written)
		case strings.HasPrefix(base, whiteoutPrefix):
			err = os.RemoveAll(filepath.Join(parent, strings.TrimPrefix(base, whiteoutPrefix)))
		default:
			target := filepath.Join(parent, base)
			written[target] = true
			err = writeEntry(root, target, hdr, tr)
		}
		if err != nil {
			return fmt.Errorf("extracting %s: %w", hdr.Name, err)
		}
	}
}

// layerPath cleans a tar entry's name into a path relative to the root, refusing one
// that climbs out of it.
func layerPath(name string) (string, error) {
	p := strings.TrimPrefix(path.Clean("/"+strings.TrimLeft(name, "/")), "/")
	if rel := path.Clean(strings.TrimLeft(name, "/")); rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("layer entry %q lies outside the image root", name)
	}
	return p, nil
}

// clearDir removes what dir holds but the paths the current layer wrote.
func clearDir(dir string, written map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); !written[p] {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeEntry creates target from hdr (its content read from r), replacing what is
// there unless both are directories, then applies its metadata.
func writeEntry(root, target string, hdr *tar.Header, r io.Reader) error {
	if fi, err := os.Lstat(target); err == nil && !(fi.IsDir() && hdr.Typeflag == tar.TypeDir) {
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	mode := uint32(hdr.Mode) & 0o7777
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	case tar.TypeReg: // the reader reports old-style regular files as TypeReg too
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		return finishEntry(target, hdr, os.Symlink(hdr.Linkname, target))
	case tar.TypeLink:
		// A hard link shares its target's inode and metadata: nothing more to set.
		return linkEntry(root, target, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		kind := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		dev := unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))
		if err := unix.Mknod(target, kind|mode, int(dev)); err != nil {
			return fmt.Errorf("creating device file: %w", err)
		}
	default:
		return nil // PAX and GNU metadata entries are consumed by the reader
	}
	return finishEntry(target, hdr, nil)
}

// linkEntry hard-links target to the entry linkname names, resolved inside root (its
// last component is not followed: a link to a symlink links the symlink).
func linkEntry(root, target, linkname string) error {
	rel, err := layerPath(linkname)
	if err != nil || rel == "" {
		return fmt.Errorf("hard link to %q: outside the image root", linkname)
	}
	dir, base := path.Split(rel)
	parent, err := securejoin.SecureJoin(root, dir)
	if err != nil {
		return err
	}
	return os.Link(filepath.Join(parent, base), target)
}

// finishEntry sets owner, mode (after the owner: chown clears set-id bits), extended
// attributes and times of a created entry; a symlink gets no mode.
func finishEntry(target string, hdr *tar.Header, created error) error {
	if created != nil {
		return created
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return fmt.Errorf("setting owner: %w", err)
	}
	if hdr.Typeflag != tar.TypeSymlink {
		if err := unix.Chmod(target, uint32(hdr.Mode)&0o7777); err != nil {
			return fmt.Errorf("setting mode: %w", err)
		}
	}
	for k, v := range hdr.PAXRecords {
		if attr, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			if err := unix.Lsetxattr(target, attr, []byte(v), 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
				return fmt.Errorf("setting extended attribute %s: %w", attr, err)
			}
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(hdr.AccessTime.UnixNano()), unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	if hdr.AccessTime.IsZero() {
		ts[0] = ts[1]
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, target, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("setting times: %w", err)
	}
	return nil
}
