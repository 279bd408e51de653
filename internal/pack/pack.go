// Package pack turns a directory into a deterministic gzipped tar, the code archive
// tfk8s ships to every replica, and unpacks one safely. The same tree always gives the
// same bytes, so archives are content-addressed (sha256-<hex>.tar.gz) and an unchanged
// re-submit uploads nothing.
package pack

import (
	"archive/tar"
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"time"
)

// epoch is the modification time of every entry: archives must not depend on when the
// files were touched.
var epoch = time.Unix(0, 0)

// Archive is a packed directory in a temporary file.
type Archive struct {
	// Path is the archive's temporary file; Remove deletes it.
	Path string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the hex digest of its content.
	SHA256 string
}

// Key returns the archive's content-addressed key under prefix.
func (a Archive) Key(prefix string) string { return Key(prefix, a.SHA256) }

// Remove deletes the archive's temporary file.
func (a Archive) Remove() error { return os.Remove(a.Path) }

// Key returns the content-addressed key <prefix>/sha256-<hex>.tar.gz.
func Key(prefix, sha256Hex string) string {
	name := "sha256-" + sha256Hex + ".tar.gz"
	if prefix == "" {
		return name
	}
	return path.Join(prefix, name)
}

var keyDigest = regexp.MustCompile(`(?:^|/)sha256-([0-9a-f]{64})\.tar\.gz$`)

// SHA256FromKey returns the digest in a content-addressed key, and whether there is one.
func SHA256FromKey(key string) (string, bool) {
	m := keyDigest.FindStringSubmatch(key)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Pack writes the archive of dir to a new file in tmpDir (os.TempDir() when empty),
// hashing it on the way, and returns it. The archive is streamed to disk, never held
// in memory. The caller removes it.
func Pack(dir, tmpDir string) (Archive, error) {
	f, err := os.CreateTemp(tmpDir, "tfk8s-code-*.tar.gz")
	if err != nil {
		return Archive{}, fmt.Errorf("packing %s: %w", dir, err)
	}
	a, err := packTo(f, dir)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("packing %s: %w", dir, cerr)
	}
	if err != nil {
		os.Remove(f.Name())
		return Archive{}, err
	}
	a.Path = f.Name()
	return a, nil
}

// packTo writes the archive of dir to f and returns its size and digest. Compression,
// hashing and writing to f run in their own goroutines, so that packing a large
// directory keeps every core busy: hashing, which cannot be split, sets the pace.
func packTo(f *os.File, dir string) (Archive, error) {
	pr, pw := io.Pipe()
	go func() {
		bw := bufio.NewWriterSize(pw, chunkSize)
		err := Write(bw, dir)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
	}()

	// The file writer gets each chunk once it is hashed, and gives it back to be
	// refilled; chunksInFlight bounds the memory used.
	const chunksInFlight = 4
	free := make(chan []byte, chunksInFlight)
	for range chunksInFlight {
		free <- make([]byte, chunkSize)
	}
	filled := make(chan []byte, chunksInFlight)
	written := make(chan error, 1)
	go func() {
		var err error
		for chunk := range filled {
			if err == nil {
				_, err = f.Write(chunk)
			}
			free <- chunk[:cap(chunk)]
		}
		written <- err
	}()

	h := sha256.New()
	var size int64
	var readErr error
	for readErr == nil {
		chunk := <-free
		var n int
		n, readErr = io.ReadFull(pr, chunk)
		if n > 0 {
			h.Write(chunk[:n])
			size += int64(n)
			filled <- chunk[:n]
		}
	}
	close(filled)
	writeErr := <-written
	if readErr == io.EOF || readErr == io.ErrUnexpectedEOF {
		readErr = nil
	}
	if err := cmp.Or(readErr, writeErr); err != nil {
		pr.CloseWithError(err) // stops the writer
		return Archive{}, fmt.Errorf("packing %s: %w", dir, err)
	}
	return Archive{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// chunkSize is the unit in which an archive moves between compression, hashing and
// writing.
const chunkSize = 1 << 20

// Write writes the deterministic tar.gz of dir to w: entries in name order, owned by
// uid and gid 0 without names, with a fixed modification time and normalised
// permissions (0755 for directories and executables, 0644 for other files), and a gzip
// header without name or time. Paths matched by the .tfk8signore files are left out, as
// are the .tfk8signore files themselves and .git directories.
func Write(w io.Writer, dir string) error {
	entries, err := walk(dir)
	if err != nil {
		return err
	}
	gz, err := newMemberWriter(w)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	sample := make([]byte, sampleSize)
	for _, e := range entries {
		if err := writeEntry(tw, gz, e, sample); err != nil {
			return fmt.Errorf("packing %s: %w", e.local, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("packing %s: %w", dir, err)
	}
	return nil
}

// writeEntry writes one entry's header and, for a file, its content, in a gzip member
// suited to it; sample is a buffer for the start of the file.
func writeEntry(tw *tar.Writer, gz *memberWriter, e entry, sample []byte) error {
	hdr := &tar.Header{Name: e.name, ModTime: epoch, Format: tar.FormatPAX}
	switch {
	case e.info.IsDir():
		hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
	case e.info.Mode()&fs.ModeSymlink != 0:
		hdr.Typeflag, hdr.Mode, hdr.Linkname = tar.TypeSymlink, 0o777, e.link
	default:
		hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeReg, 0o644, e.info.Size()
		if e.info.Mode()&0o111 != 0 {
			hdr.Mode = 0o755
		}
	}
	if hdr.Typeflag != tar.TypeReg {
		return tw.WriteHeader(hdr)
	}
	f, err := os.Open(e.local)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.ReadFull(f, sample[:min(int64(len(sample)), hdr.Size)])
	if err != nil {
		return shrank(err, int64(n), hdr.Size)
	}
	if err := gz.startFile(sample[:n], hdr.Size); err != nil {
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(sample[:n]); err != nil {
		return err
	}
	rest, err := io.CopyN(tw, f, hdr.Size-int64(n))
	return shrank(err, int64(n)+rest, hdr.Size)
}

// shrank explains a file that ended before the size it had when it was listed.
func shrank(err error, got, want int64) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("file shrank while packing: %d of %d bytes", got, want)
	}
	return err
}
