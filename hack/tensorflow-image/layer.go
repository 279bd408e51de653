package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"
)

// epoch is the modification time of every file in a layer, so that the same tree gives
// the same tar. Python's bytecode is compiled with --invalidation-mode unchecked-hash,
// which does not compare it with the source's time.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// layerFile is a gzipped layer tar in the cache, with the digests an image needs.
type layerFile struct {
	Path   string  `json:"-"`
	Sum    v1.Hash `json:"digest"`
	Diff   v1.Hash `json:"diffID"`
	Length int64   `json:"size"`
}

// writeLayer writes the tree under root as a gzipped tar to path, and its digests to
// path.json: entries sorted by name, times fixed, owners by number, hard links kept.
func writeLayer(root, path string) (*layerFile, error) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return nil, err
	}
	defer os.Remove(path + ".tmp")
	defer f.Close()
	compressed, uncompressed := sha256.New(), sha256.New()
	size := &countingWriter{w: io.MultiWriter(f, compressed)}
	zw, err := gzip.NewWriterLevel(size, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(io.MultiWriter(zw, uncompressed))
	if err := writeTree(tw, root); err != nil {
		return nil, fmt.Errorf("writing the layer of %s: %w", root, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	l := &layerFile{Path: path, Sum: sha256Hash(compressed), Diff: sha256Hash(uncompressed), Length: size.n}
	meta, err := json.Marshal(l)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".json", meta, 0o644); err != nil {
		return nil, err
	}
	return l, os.Rename(path+".tmp", path)
}

// readLayer returns the layer writeLayer wrote to path, or nil when there is none.
func readLayer(path string) *layerFile {
	meta, err := os.ReadFile(path + ".json")
	if err != nil {
		return nil
	}
	var l layerFile
	if json.Unmarshal(meta, &l) != nil {
		return nil
	}
	if st, err := os.Stat(path); err != nil || st.Size() != l.Length {
		return nil
	}
	l.Path = path
	return &l
}

// writeTree writes every file under root in WalkDir's order: depth first, each
// directory's entries sorted by name, so that the same tree gives the same tar.
func writeTree(tw *tar.Writer, root string) error {
	var paths []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	links := map[[2]uint64]string{}
	for _, path := range paths {
		if err := writeEntry(tw, root, path, links); err != nil {
			return fmt.Errorf("adding %s: %w", path, err)
		}
	}
	return nil
}

// writeEntry writes one file, directory, link or device; a file seen before under
// another name (same inode) becomes a hard link to that name.
func writeEntry(tw *tar.Writer, root, path string, links map[[2]uint64]string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st := info.Sys().(*syscall.Stat_t)
	hdr := &tar.Header{
		Name: tarName(root, path, info.IsDir()), Mode: int64(unixMode(info.Mode())),
		Uid: int(st.Uid), Gid: int(st.Gid), ModTime: epoch, Format: tar.FormatPAX,
	}
	mode := info.Mode()
	switch {
	case mode.IsDir():
		hdr.Typeflag = tar.TypeDir
	case mode&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		if hdr.Linkname, err = os.Readlink(path); err != nil {
			return err
		}
	case mode&(fs.ModeDevice|fs.ModeNamedPipe) != 0:
		hdr.Typeflag = tar.TypeFifo
		if mode&fs.ModeDevice != 0 {
			hdr.Typeflag = tar.TypeBlock
			if mode&fs.ModeCharDevice != 0 {
				hdr.Typeflag = tar.TypeChar
			}
			hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
		}
	case mode.IsRegular():
		inode := [2]uint64{st.Dev, st.Ino}
		if first, ok := links[inode]; ok && st.Nlink > 1 {
			hdr.Typeflag, hdr.Linkname = tar.TypeLink, first
			return tw.WriteHeader(hdr)
		}
		links[inode] = hdr.Name
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		return writeFile(tw, hdr, path)
	default:
		return nil // sockets: nothing to keep
	}
	return tw.WriteHeader(hdr)
}

// writeFile writes a regular file's header and content.
func writeFile(tw *tar.Writer, hdr *tar.Header, path string) error {
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

// tarName is path relative to root, slash-separated, a directory's with a trailing slash.
func tarName(root, path string, dir bool) string {
	name := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
	if dir {
		name += "/"
	}
	return name
}

// unixMode is the permission bits of mode with setuid, setgid and sticky as tar has them.
func unixMode(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// Layer is the cached file as an image layer; its digests are not computed again.
func (l *layerFile) Layer() (v1.Layer, error) {
	return partial.CompressedToLayer(l)
}

// Compressed, MediaType and DiffID make layerFile a partial.CompressedLayer.
func (l *layerFile) Compressed() (io.ReadCloser, error)  { return os.Open(l.Path) }
func (l *layerFile) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *layerFile) DiffID() (v1.Hash, error)            { return l.Diff, nil }

// Digest and Size complete partial.CompressedLayer.
func (l *layerFile) Digest() (v1.Hash, error) { return l.Sum, nil }
func (l *layerFile) Size() (int64, error)     { return l.Length, nil }

func sha256Hash(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
