package storage

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
	"time"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// DataSet is a local data directory, content-addressed: its files go under
// datasets/sha256-<digest of the tree>/, and a marker datasets/sha256-<digest>.json,
// written once they are all there, tells a later submit that nothing is to upload. The
// marker is beside the prefix, not in it, so that replicas do not download it.
type DataSet struct {
	dir    string
	digest string
	files  int
	bytes  int64
	// fingerprint is the directory's in the digest cache, "" if it changed too
	// recently to have one.
	fingerprint string
	// list is every file with its size and SHA-256, for the marker; nil when the
	// digest came from the cache and the files were not read.
	list []DataFile
}

// ScanDataSet scans dir, unless the digest cache knows its digest. The tree is
// walked once: the fingerprint and, on a miss, the digest come from the same listing.
func ScanDataSet(dir string, cache pack.DigestCache) (DataSet, error) {
	files, err := listData(dir)
	if err != nil {
		return DataSet{}, err
	}
	f := pack.NewFingerprinter("data")
	for _, file := range files {
		f.Add(file.rel, file.info)
	}
	fp := f.Sum()
	if d, ok := cache.Get(fp); ok {
		return DataSet{dir: dir, digest: d.Digest, files: d.Files, bytes: d.Size, fingerprint: fp}, nil
	}
	d, err := digestData(dir, files)
	d.fingerprint = fp
	return d, err
}

// Remember records in the cache that the directory is stored under its digest.
func (d DataSet) Remember(cache pack.DigestCache) {
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
	// Path order, as DataManifest's digest takes them ("a.txt" before "a/b",
	// which a walk of the tree visits first).
	slices.SortFunc(files, func(a, b dataFile) int { return strings.Compare(a.rel, b.rel) })
	return files, nil
}

// Prefix is where the files go, under root (Config.Root).
func (d DataSet) Prefix(root URI) URI {
	return root.Join(DataPrefix, "sha256-"+d.digest+"/")
}

// marker is written once every file is stored.
func (d DataSet) marker(root URI) URI {
	return root.Join(DataPrefix, "sha256-"+d.digest+".json")
}

// scanData computes the digest of a data directory: of every regular file's path,
// size and SHA-256, in path order, the files SyncDir uploads.
func scanData(dir string) (DataSet, error) {
	files, err := listData(dir)
	if err != nil {
		return DataSet{}, err
	}
	return digestData(dir, files)
}

// digestData reads and hashes the listed files of dir.
func digestData(dir string, files []dataFile) (DataSet, error) {
	d := DataSet{dir: dir, list: []DataFile{}}
	for _, file := range files {
		sum, err := pack.FileSHA256(filepath.Join(dir, filepath.FromSlash(file.rel)))
		if err != nil {
			return DataSet{}, fmt.Errorf("reading --data %s: %w", dir, err)
		}
		d.files++
		d.bytes += file.info.Size()
		d.list = append(d.list, DataFile{Path: file.rel, Size: file.info.Size(), SHA256: sum})
	}
	d.digest = DataSetDigest(d.list)
	return d, nil
}

// UploadData uploads the data directory unless its marker says it is stored, and
// returns the bytes uploaded. The marker, a DataManifest, lists every file's
// size and SHA-256 as they were uploaded, so that the replicas verify what they fetch.
func UploadData(ctx context.Context, c *Client, d DataSet, root URI, errOut io.Writer) (int64, error) {
	marker := d.marker(root)
	stored, err := c.Stat(ctx, marker)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, fmt.Errorf("checking for the data set: %w", err)
	}
	// A marker stored with its digest is a DataManifest; older tfk8s wrote a count.
	if err == nil && stored.SHA256 != "" {
		fmt.Fprintf(errOut, "data unchanged, 0 bytes uploaded (%s)\n", d.Prefix(root))
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
	fmt.Fprintf(errOut, "uploading data: %d files, %s\n", d.files, FormatBytes(d.bytes))
	state := NewSyncState()
	stats, err := c.SyncDir(ctx, d.dir, d.Prefix(root), state)
	if err != nil {
		return stats.Bytes, fmt.Errorf("uploading data: %w", err)
	}
	if err := checkUploaded(d, state); err != nil {
		return stats.Bytes, err
	}
	if err := putDataManifest(ctx, c, d, marker); err != nil {
		return stats.Bytes, err
	}
	fmt.Fprintf(errOut, "data uploaded: %s to %s\n", FormatBytes(stats.Bytes), d.Prefix(root))
	return stats.Bytes, nil
}

// checkUploaded makes sure every file was stored as it was hashed: a file rewritten
// since would be stored with content the manifest does not list.
func checkUploaded(d DataSet, state *SyncState) error {
	for _, f := range d.list {
		got, ok := state.Get(filepath.Join(d.dir, filepath.FromSlash(f.Path)))
		if !ok || got.SHA256 != f.SHA256 || got.Size != f.Size {
			return fmt.Errorf("uploading data: --data %s: %s changed while it was submitted: submit again", d.dir, f.Path)
		}
	}
	return nil
}

// putDataManifest stores the marker of the data set, with its own digest recorded.
func putDataManifest(ctx context.Context, c *Client, d DataSet, marker URI) error {
	body, err := json.Marshal(DataManifest{Digest: d.digest, Files: d.list, Bytes: d.bytes, Uploaded: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encoding the data manifest: %w", err)
	}
	sum := sha256.Sum256(body)
	opts := UploadOptions{ContentType: "application/json", SHA256: hex.EncodeToString(sum[:])}
	if err := c.PutObject(ctx, marker, bytes.NewReader(body), int64(len(body)), opts); err != nil {
		return fmt.Errorf("uploading data: %w", err)
	}
	return nil
}
