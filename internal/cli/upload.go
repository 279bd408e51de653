package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Prefixes of the objects submit uploads, in the configured bucket.
const (
	codePrefix = "code"
	dataPrefix = "datasets"
)

// checkDir checks that dir is a readable directory, naming the flag or argument it
// came from.
func checkDir(what, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: not a directory", what, dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	defer f.Close()
	if _, err := f.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	return nil
}

// codeArchive is the code directory's archive: packed, or known by its digest from the
// digest cache and packed only if the storage turns out not to have it.
type codeArchive struct {
	pack.Archive
	dir string
	// fingerprint is the directory's in the digest cache, "" if it changed too
	// recently to have one.
	fingerprint string
	cache       pack.DigestCache
}

// packCode packs dir, unless the digest cache knows its archive's digest.
func packCode(dir string, cache pack.DigestCache) (codeArchive, error) {
	fp, err := pack.Fingerprint(dir)
	if err != nil {
		return codeArchive{}, fmt.Errorf("packing DIR: %w", err)
	}
	a := codeArchive{dir: dir, fingerprint: fp, cache: cache}
	if d, ok := cache.Get(fp); ok {
		a.SHA256, a.Size = d.Digest, d.Size
		return a, nil
	}
	if a.Archive, err = pack.Pack(dir, ""); err != nil {
		return codeArchive{}, fmt.Errorf("packing DIR: %w", err)
	}
	return a, nil
}

// Remove deletes the archive's file, if it was packed.
func (a codeArchive) Remove() {
	if a.Path != "" {
		_ = a.Archive.Remove()
	}
}

// remember records in the cache that the directory is stored under its digest.
func (a codeArchive) remember() {
	if a.fingerprint != "" {
		a.cache.Put(a.fingerprint, pack.CachedDigest{Digest: a.SHA256, Size: a.Size})
	}
}

// uploadCode uploads the code archive to dst unless the storage has it already (same
// content, same key), and returns the bytes uploaded.
func uploadCode(ctx context.Context, c *storage.Client, a *codeArchive, dst storage.URI, errOut io.Writer) (int64, error) {
	exists, err := c.Exists(ctx, dst)
	if err != nil {
		return 0, fmt.Errorf("checking for the code archive: %w", err)
	}
	if exists {
		fmt.Fprintf(errOut, "code unchanged, 0 bytes uploaded (%s)\n", dst)
		return 0, nil
	}
	if a.Path == "" {
		// Known from the cache, but no longer stored: pack it after all.
		packed, err := pack.Pack(a.dir, "")
		if err != nil {
			return 0, fmt.Errorf("packing DIR: %w", err)
		}
		if packed.SHA256 != a.SHA256 {
			packed.Remove()
			a.cache.Forget(a.fingerprint)
			return 0, fmt.Errorf("packing DIR: %s changed while it was submitted: submit again", a.dir)
		}
		a.Archive = packed
	}
	bar := newProgressBar(errOut, "uploading code")
	err = c.UploadFile(ctx, a.Path, dst, storage.UploadOptions{Progress: bar.update, SHA256: a.SHA256, ContentType: "application/gzip"})
	bar.finish()
	if err != nil {
		return 0, fmt.Errorf("uploading code: %w", err)
	}
	fmt.Fprintf(errOut, "code uploaded: %s to %s\n", formatBytes(a.Size), dst)
	return a.Size, nil
}

// dataSet is a local data directory, content-addressed: its files go under
// datasets/sha256-<digest of the tree>/, and a marker datasets/sha256-<digest>.json,
// written once they are all there, tells a later submit that nothing is to upload. The
// marker is beside the prefix, not in it, so that replicas do not download it.
type dataSet struct {
	dir    string
	digest string
	files  int
	bytes  int64
	// fingerprint is the directory's in the digest cache, "" if it changed too
	// recently to have one.
	fingerprint string
	// list is every file with its size and SHA-256, for the marker; nil when the
	// digest came from the cache and the files were not read.
	list []storage.DataFile
}

// scanDataCached scans dir, unless the digest cache knows its digest. The tree is
// walked once: the fingerprint and, on a miss, the digest come from the same listing.
func scanDataCached(dir string, cache pack.DigestCache) (dataSet, error) {
	files, err := listData(dir)
	if err != nil {
		return dataSet{}, err
	}
	f := pack.NewFingerprinter("data")
	for _, file := range files {
		f.Add(file.rel, file.info)
	}
	fp := f.Sum()
	if d, ok := cache.Get(fp); ok {
		return dataSet{dir: dir, digest: d.Digest, files: d.Files, bytes: d.Size, fingerprint: fp}, nil
	}
	d, err := digestData(dir, files)
	d.fingerprint = fp
	return d, err
}

// remember records in the cache that the directory is stored under its digest.
func (d dataSet) remember(cache pack.DigestCache) {
	if d.fingerprint != "" {
		cache.Put(d.fingerprint, pack.CachedDigest{Digest: d.digest, Size: d.bytes, Files: d.files})
	}
}

// dataFile is a regular file of a data directory, by its slash-separated path relative
// to the directory.
type dataFile struct {
	rel  string
	info fs.FileInfo
}

// listData lists the regular files under dir (following links to files, as SyncDir
// does), in path order. A symbolic link that leads outside dir is refused, by name:
// following it would upload a file the user never put in the data set.
func listData(dir string) ([]dataFile, error) {
	links, err := pack.NewLinkChecker(dir)
	if err != nil {
		return nil, fmt.Errorf("reading --data %s: %w", dir, err)
	}
	var files []dataFile
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		if e.Type()&fs.ModeSymlink != 0 {
			if err := links.Check(p); err != nil {
				return err
			}
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, dataFile{rel: filepath.ToSlash(rel), info: st})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading --data %s: %w", dir, err)
	}
	// Path order, as storage.DataManifest's digest takes them ("a.txt" before "a/b",
	// which a walk of the tree visits first).
	slices.SortFunc(files, func(a, b dataFile) int { return strings.Compare(a.rel, b.rel) })
	return files, nil
}

// prefix is where the files go.
func (d dataSet) prefix(bucket string) storage.URI {
	return storage.URI{Bucket: bucket, Key: dataPrefix + "/sha256-" + d.digest + "/"}
}

// marker is written once every file is stored.
func (d dataSet) marker(bucket string) storage.URI {
	return storage.URI{Bucket: bucket, Key: dataPrefix + "/sha256-" + d.digest + ".json"}
}

// scanData computes the digest of a data directory: of every regular file's path,
// size and SHA-256, in path order, the files SyncDir uploads.
func scanData(dir string) (dataSet, error) {
	files, err := listData(dir)
	if err != nil {
		return dataSet{}, err
	}
	return digestData(dir, files)
}

// digestData reads and hashes the listed files of dir.
func digestData(dir string, files []dataFile) (dataSet, error) {
	d := dataSet{dir: dir, list: []storage.DataFile{}}
	for _, file := range files {
		sum, err := storage.FileSHA256(filepath.Join(dir, filepath.FromSlash(file.rel)))
		if err != nil {
			return dataSet{}, fmt.Errorf("reading --data %s: %w", dir, err)
		}
		d.files++
		d.bytes += file.info.Size()
		d.list = append(d.list, storage.DataFile{Path: file.rel, Size: file.info.Size(), SHA256: sum})
	}
	d.digest = storage.DataSetDigest(d.list)
	return d, nil
}

// uploadData uploads the data directory unless its marker says it is stored, and
// returns the bytes uploaded. The marker, a storage.DataManifest, lists every file's
// size and SHA-256 as they were uploaded, so that the replicas verify what they fetch.
func uploadData(ctx context.Context, c *storage.Client, d dataSet, bucket string, errOut io.Writer) (int64, error) {
	marker := d.marker(bucket)
	stored, err := c.Stat(ctx, marker)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, fmt.Errorf("checking for the data set: %w", err)
	}
	// A marker stored with its digest is a DataManifest; older tfk8s wrote a count.
	if err == nil && stored.SHA256 != "" {
		fmt.Fprintf(errOut, "data unchanged, 0 bytes uploaded (%s)\n", d.prefix(bucket))
		return 0, nil
	}
	if d.list == nil {
		// Known from the digest cache, but not stored: read it after all.
		scanned, err := scanData(d.dir)
		if err != nil {
			return 0, err
		}
		if scanned.digest != d.digest {
			return 0, fmt.Errorf("reading --data %s: it changed while it was submitted: submit again", d.dir)
		}
		d.list = scanned.list
	}
	fmt.Fprintf(errOut, "uploading data: %d files, %s\n", d.files, formatBytes(d.bytes))
	state := storage.NewSyncState()
	stats, err := c.SyncDir(ctx, d.dir, d.prefix(bucket), state)
	if err != nil {
		return stats.Bytes, fmt.Errorf("uploading data: %w", err)
	}
	if err := checkUploaded(d, state); err != nil {
		return stats.Bytes, err
	}
	if err := putDataManifest(ctx, c, d, marker); err != nil {
		return stats.Bytes, err
	}
	fmt.Fprintf(errOut, "data uploaded: %s to %s\n", formatBytes(stats.Bytes), d.prefix(bucket))
	return stats.Bytes, nil
}

// checkUploaded makes sure every file was stored as it was hashed: a file rewritten
// since would be stored with content the manifest does not list.
func checkUploaded(d dataSet, state *storage.SyncState) error {
	for _, f := range d.list {
		got, ok := state.Get(filepath.Join(d.dir, filepath.FromSlash(f.Path)))
		if !ok || got.SHA256 != f.SHA256 || got.Size != f.Size {
			return fmt.Errorf("uploading data: --data %s: %s changed while it was submitted: submit again", d.dir, f.Path)
		}
	}
	return nil
}

// putDataManifest stores the marker of the data set, with its own digest recorded.
func putDataManifest(ctx context.Context, c *storage.Client, d dataSet, marker storage.URI) error {
	body, err := json.Marshal(storage.DataManifest{Digest: d.digest, Files: d.list, Bytes: d.bytes, Uploaded: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encoding the data manifest: %w", err)
	}
	sum := sha256.Sum256(body)
	opts := storage.UploadOptions{ContentType: "application/json", SHA256: hex.EncodeToString(sum[:])}
	if err := c.PutObject(ctx, marker, bytes.NewReader(body), int64(len(body)), opts); err != nil {
		return fmt.Errorf("uploading data: %w", err)
	}
	return nil
}

// progressBar draws an upload's progress on a terminal, at most ten times a second;
// on anything else it draws nothing.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	last  time.Time
	drawn bool
}

// newProgressBar returns a bar on w, or nil if w is not a terminal.
func newProgressBar(w io.Writer, label string) *progressBar {
	if !isTerminal(w) {
		return nil
	}
	return &progressBar{w: w, label: label}
}

// update is a storage.ProgressFunc; a nil bar ignores it.
func (b *progressBar) update(done, total int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now(); now.Sub(b.last) >= 100*time.Millisecond || done == total {
		b.last = now
		b.drawn = true
		fmt.Fprintf(b.w, "\r%s %s", b.label, renderBar(done, total, 30))
	}
}

// finish ends the bar's line.
func (b *progressBar) finish() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}

// renderBar renders "[=====>    ]  45% 4.5 MiB/10.0 MiB" in width characters of bar.
func renderBar(done, total int64, width int) string {
	if total <= 0 {
		return formatBytes(done)
	}
	done = min(done, total)
	filled := int(int64(width) * done / total)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("[%s] %3d%% %s/%s", bar, 100*done/total, formatBytes(done), formatBytes(total))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// formatBytes renders a size as "512 B", "4.1 KiB", "1.0 GiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
