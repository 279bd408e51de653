package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// FileState is what SyncDir remembers of a file it uploaded.
type FileState struct {
	// Key is the object key the file was uploaded to.
	Key string `json:"key"`
	// Size, ModTime and SHA256 describe the content uploaded.
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	SHA256  string    `json:"sha256"`
}

// SyncState remembers, per local path, the version of each file last uploaded, so that
// SyncDir uploads only what changed since. It is safe for concurrent use.
type SyncState struct {
	mu    sync.Mutex
	files map[string]FileState
}

// NewSyncState returns an empty state: everything is uploaded on the first sync.
func NewSyncState() *SyncState {
	return &SyncState{files: map[string]FileState{}}
}

// Set records that the file at localPath was uploaded as f, e.g. from a manifest
// written by an earlier run. A zero ModTime makes the next sync hash the file.
func (s *SyncState) Set(localPath string, f FileState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[localPath] = f
}

// Get returns what is recorded for localPath.
func (s *SyncState) Get(localPath string) (FileState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[localPath]
	return f, ok
}

// Files returns a copy of the recorded files, keyed by local path.
func (s *SyncState) Files() map[string]FileState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]FileState, len(s.files))
	for k, v := range s.files {
		out[k] = v
	}
	return out
}

// SyncStats counts the work of a sync.
type SyncStats struct {
	// Files is the number of files considered.
	Files int
	// Transferred is the number of files uploaded or downloaded.
	Transferred int
	// Bytes is the number of bytes uploaded or downloaded.
	Bytes int64
}

// add counts files and bytes, under mu.
func (s *SyncStats) add(mu *sync.Mutex, files, transferred int, bytes int64) {
	mu.Lock()
	defer mu.Unlock()
	s.Files += files
	s.Transferred += transferred
	s.Bytes += bytes
}

// syncParallelism is how many files SyncDir and DownloadPrefix move at once.
const syncParallelism = 4

// SyncDir uploads to dst the files under localPath that changed since state last saw
// them. A directory maps to the prefix dst (its files to dst/<relative path>); a single
// file maps to dst itself, or to dst/<name> when dst is a prefix. A path that does not
// exist yet is not an error. Nothing is ever deleted, locally or remotely.
//
// A file whose size and modification time are unchanged is skipped without being read,
// unless it was modified within racyWindow of the last read; one that was touched but
// has the same SHA-256 is skipped too. The SHA-256 recorded is that of the bytes sent,
// so a file rewritten during its upload is never recorded with a digest its object
// lacks, and a file rewritten while it is read is uploaded again until it holds still
// (see uploadHashed). The first storage error that outlives the retries ends the sync
// (the rest is left for the next call); local errors are collected and the sync goes on.
func (c *Client) SyncDir(ctx context.Context, localPath string, dst URI, state *SyncState) (SyncStats, error) {
	var stats SyncStats
	root, err := os.Stat(localPath)
	if errors.Is(err, fs.ErrNotExist) {
		return stats, nil
	}
	if err != nil {
		return stats, fmt.Errorf("syncing %s: %w", localPath, err)
	}
	type job struct {
		path string
		key  URI
	}
	var jobs []job
	if !root.IsDir() {
		if dst.IsPrefix() {
			dst = dst.Join(filepath.Base(localPath))
		}
		jobs = append(jobs, job{localPath, dst})
	} else {
		err = filepath.WalkDir(localPath, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walking
				}
				return err
			}
			if !regularOrLinkToRegular(p, d) {
				return nil
			}
			rel, err := filepath.Rel(localPath, p)
			if err != nil {
				return err
			}
			jobs = append(jobs, job{p, dst.Dir().Join(filepath.ToSlash(rel))})
			return nil
		})
		if err != nil {
			return stats, fmt.Errorf("syncing %s: %w", localPath, err)
		}
	}

	var mu sync.Mutex
	var localErrs []error
	err = forEach(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		n, err := c.syncFile(ctx, j.path, j.key, state)
		switch {
		case err == nil:
			uploaded := 0
			if n >= 0 {
				uploaded = 1
			}
			stats.add(&mu, 1, uploaded, max(n, 0))
			return nil
		case errors.Is(err, fs.ErrNotExist):
			return nil // removed since the walk: nothing to keep
		case isLocal(err):
			mu.Lock()
			localErrs = append(localErrs, err)
			mu.Unlock()
			return nil
		default:
			return err
		}
	})
	if err = errors.Join(append(localErrs, err)...); err != nil {
		return stats, fmt.Errorf("syncing %s to %s: %w", localPath, dst, err)
	}
	return stats, nil
}

// localError marks an error reading a local file.
type localError struct{ error }

func (e localError) Unwrap() error { return e.error }

func isLocal(err error) bool {
	var le localError
	return errors.As(err, &le)
}

// racyWindow is how recent a file's modification time may be for SyncDir to trust it
// next time. Within it, a write may fall in the same clock tick as the read, leaving
// size and time unchanged: such a file is hashed again at the next sync (as git does
// with "racily clean" entries).
const racyWindow = 2 * time.Second

// syncFile uploads one file if it changed; it returns the bytes uploaded, -1 if skipped.
func (c *Client) syncFile(ctx context.Context, path string, dst URI, state *SyncState) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return -1, localError{err}
	}
	prev, seen := state.Get(path)
	seen = seen && prev.Key == dst.Key
	if seen && !prev.ModTime.IsZero() && prev.Size == st.Size() && prev.ModTime.Equal(st.ModTime()) {
		return -1, nil
	}
	if seen && prev.Size == st.Size() {
		// Touched, racy or known from a manifest only: compare the content.
		readStart := time.Now()
		sum, err := pack.FileSHA256(path)
		if err != nil {
			return -1, localError{err}
		}
		if sum == prev.SHA256 {
			state.Set(path, FileState{Key: dst.Key, Size: st.Size(), ModTime: trustedModTime(st, readStart), SHA256: sum})
			return -1, nil
		}
	}
	uploaded, err := c.uploadHashed(ctx, path, dst)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return -1, localError{err}
		}
		return -1, err
	}
	state.Set(path, uploaded)
	return uploaded.Size, nil
}

// trustedModTime returns the file's modification time, or zero when it is too close to
// readStart to prove that the content read is the content now.
func trustedModTime(st fs.FileInfo, readStart time.Time) time.Time {
	if st.ModTime().After(readStart.Add(-racyWindow)) {
		return time.Time{}
	}
	return st.ModTime()
}

// stableAttempts bounds the uploads of a file that keeps changing while it is uploaded.
const stableAttempts = 5

// uploadHashed uploads the file, hashing exactly the bytes sent, and returns what was
// stored. A file rewritten in place while it is read would be stored torn, a mix of two
// versions that never existed as a whole: after each upload the open file is looked at
// again (its size and time, and its content unless they prove it untouched) and
// uploaded again while it changed, up to stableAttempts times. The digest recorded is
// always that of the bytes stored; a file still changing after the last try is
// recorded without a trusted time, so that the next sync looks at it again.
func (c *Client) uploadHashed(ctx context.Context, path string, dst URI) (FileState, error) {
	for try := 1; ; try++ {
		var stored FileState
		var changed bool
		err := Retry(ctx, c.backoff, func(ctx context.Context) error {
			var err error
			stored, changed, err = c.putFileOnce(ctx, path, dst)
			return err
		})
		if err != nil {
			return FileState{}, fmt.Errorf("uploading %s to %s: %w", path, dst, err)
		}
		if !changed || try == stableAttempts {
			if changed {
				stored.ModTime = time.Time{}
			}
			return stored, nil
		}
	}
}

// putFileOnce uploads the file once and reports whether it changed while it was read.
func (c *Client) putFileOnce(ctx context.Context, path string, dst URI) (FileState, bool, error) {
	readStart := time.Now()
	f, before, err := openForUpload(path)
	if err != nil {
		return FileState{}, false, err
	}
	defer f.Close()
	sum, err := c.putHashed(ctx, f, 0, before.Size(), dst)
	if err != nil {
		return FileState{}, false, err
	}
	stored := FileState{Key: dst.Key, Size: before.Size(), ModTime: trustedModTime(before, readStart), SHA256: sum}
	after, err := f.Stat()
	if err != nil {
		return FileState{}, false, Permanent(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		return stored, true, nil
	}
	if !stored.ModTime.IsZero() {
		return stored, false, nil // old enough that any write since would show in its time
	}
	again, err := hashSection(f, 0, before.Size())
	if err != nil {
		return FileState{}, false, Permanent(err)
	}
	return stored, again != sum, nil
}

// UploadSection uploads the bytes of the file at path from offset to its end as dst,
// and returns what was stored (Size is the section's). The agent stores each attempt's
// part of the log file that a container's attempts append to this way.
func (c *Client) UploadSection(ctx context.Context, path string, offset int64, dst URI) (FileState, error) {
	var stored FileState
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		f, st, err := openForUpload(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n := max(st.Size()-offset, 0)
		sum, err := c.putHashed(ctx, f, min(offset, st.Size()), n, dst)
		if err != nil {
			return err
		}
		stored = FileState{Key: dst.Key, Size: n, ModTime: st.ModTime(), SHA256: sum}
		return nil
	})
	if err != nil {
		return FileState{}, fmt.Errorf("uploading %s to %s: %w", path, dst, err)
	}
	return stored, nil
}

// putHashed uploads n bytes of f from offset as dst and returns the SHA-256 of the
// bytes sent.
func (c *Client) putHashed(ctx context.Context, f *os.File, offset, n int64, dst URI) (string, error) {
	h := sha256.New()
	var section io.Reader = io.NewSectionReader(f, offset, n)
	if uploadReadHook != nil {
		section = &hookedReader{r: section, path: f.Name()}
	}
	// The digest is taken here, on the way out: minio-go need not hash the payload a
	// second time to sign it.
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream", DisableContentSha256: true}
	info, err := c.mc.PutObject(ctx, dst.Bucket, dst.Key, io.TeeReader(section, h), n, opts)
	if err != nil {
		return "", err
	}
	if info.Size != n {
		return "", fmt.Errorf("uploaded %d bytes of %d: the file changed during the upload", info.Size, n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashSection returns the hex SHA-256 of n bytes of f from offset.
func hashSection(f *os.File, offset, n int64) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, offset, n)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// uploadReadHook, set by tests only, is called once per upload of a file, after its
// first bytes were read, to play a writer that rewrites the file at that moment.
var uploadReadHook func(path string)

// hookedReader reads in small pieces and calls uploadReadHook after the first one.
type hookedReader struct {
	r      io.Reader
	path   string
	called bool
}

func (h *hookedReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p[:min(len(p), 16<<10)])
	if n > 0 && !h.called {
		h.called = true
		uploadReadHook(h.path)
	}
	return n, err
}

// regularOrLinkToRegular reports whether a walked entry is a file to transfer: a regular
// file, or a symbolic link to one. Links to directories are not followed, so a link
// cycle cannot make a walk endless.
func regularOrLinkToRegular(path string, d fs.DirEntry) bool {
	if d.Type().IsRegular() {
		return true
	}
	if d.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// forEach calls fn for 0..n-1 with syncParallelism goroutines. The first error cancels
// the context given to the calls still to come, and is returned.
func forEach(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range min(n, syncParallelism) {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					once.Do(func() { first = err; cancel(err) })
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = context.Cause(ctx)
	}
	return first
}
