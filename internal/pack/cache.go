package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// A DigestCache remembers the digests of directories by what stat says of their files
// (size, mode, modification and change times, inode), as git's index does, so that a
// re-submit of an unchanged tree neither reads nor hashes it. The change time, which no
// program can set, catches a file rewritten with its old modification time restored.
type DigestCache struct {
	// path is the cache file; "" turns the cache off.
	path string
}

// digestCacheEntries bounds the cache file: the least recently used entries go.
const digestCacheEntries = 256

// racyWindow: a tree with a file modified this recently is not cached, since a second
// change within the file system's timestamp granularity could go unseen.
const racyWindow = 2 * time.Second

// CachedDigest is what the cache holds for a tree.
type CachedDigest struct {
	// Digest is the SHA-256 (hex) the tree was stored under.
	Digest string `json:"digest"`
	// Size and Files describe what was stored: the archive's size, or the data set's
	// bytes and file count.
	Size  int64 `json:"size"`
	Files int   `json:"files,omitempty"`
	Used  int64 `json:"used"`
}

// DefaultDigestCacheFile is where the tfk8s command keeps its digest cache:
// $XDG_CACHE_HOME/tfk8s/digests.json, else ~/.cache/tfk8s/digests.json; "" when the user
// has no cache directory.
func DefaultDigestCacheFile() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "tfk8s", "digests.json")
}

// NewDigestCache returns a cache kept in the file at path; "" remembers nothing.
func NewDigestCache(path string) DigestCache { return DigestCache{path: path} }

// Get returns what was stored for fingerprint; nothing for "", a tree that changed too
// recently to have a fingerprint.
func (c DigestCache) Get(fingerprint string) (CachedDigest, bool) {
	if fingerprint == "" {
		return CachedDigest{}, false
	}
	entries := c.load()
	e, ok := entries[fingerprint]
	return e, ok
}

// Put records what fingerprint was stored under.
func (c DigestCache) Put(fingerprint string, d CachedDigest) {
	if c.path == "" {
		return
	}
	entries := c.load()
	d.Used = time.Now().UnixNano()
	entries[fingerprint] = d
	if len(entries) > digestCacheEntries {
		keys := make([]string, 0, len(entries))
		for k := range entries {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return entries[keys[i]].Used < entries[keys[j]].Used })
		for _, k := range keys[:len(entries)-digestCacheEntries] {
			delete(entries, k)
		}
	}
	c.save(entries)
}

// Forget drops fingerprint, when what it names is no longer stored.
func (c DigestCache) Forget(fingerprint string) {
	if c.path == "" {
		return
	}
	entries := c.load()
	if _, ok := entries[fingerprint]; !ok {
		return
	}
	delete(entries, fingerprint)
	c.save(entries)
}

// save replaces the cache file with entries, through a rename, so that a concurrent
// tfk8s never reads half a file. Failing to is not an error: the cache is an
// optimisation.
func (c DigestCache) save(entries map[string]CachedDigest) {
	data, err := json.Marshal(entries)
	if err != nil || os.MkdirAll(filepath.Dir(c.path), 0o700) != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", c.path, os.Getpid())
	if os.WriteFile(tmp, data, 0o600) == nil {
		_ = os.Rename(tmp, c.path)
	}
}

func (c DigestCache) load() map[string]CachedDigest {
	entries := map[string]CachedDigest{}
	if c.path == "" {
		return entries
	}
	data, err := os.ReadFile(c.path)
	if err == nil {
		_ = json.Unmarshal(data, &entries) // a damaged cache is an empty one
	}
	return entries
}

// Fingerprinter accumulates what stat says of the files of a tree.
type Fingerprinter struct {
	h      hash.Hash
	newest time.Time
}

// NewFingerprinter starts the fingerprint of a tree of the given kind ("code", "data"):
// kinds never share fingerprints.
func NewFingerprinter(kind string) *Fingerprinter {
	f := &Fingerprinter{h: sha256.New()}
	fmt.Fprintf(f.h, "tfk8s %s v1\n", kind)
	return f
}

// Add records one entry of the tree, by its slash-separated relative name.
func (f *Fingerprinter) Add(name string, info fs.FileInfo) {
	var ino, ctimeNs uint64
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
		ctimeNs = changeTimeNs(st)
	}
	fmt.Fprintf(f.h, "%s\x00%o\x00%d\x00%d\x00%d\x00%d\n", name, info.Mode(), info.Size(), info.ModTime().UnixNano(), ino, ctimeNs)
	// A directory's time changes with its entries, which are in the fingerprint anyway.
	if t := info.ModTime(); !info.IsDir() && t.After(f.newest) {
		f.newest = t
	}
}

// Sum returns the fingerprint, or "" if a file changed too recently for one to be
// trusted.
func (f *Fingerprinter) Sum() string {
	if time.Since(f.newest) < racyWindow {
		return ""
	}
	return hex.EncodeToString(f.h.Sum(nil))
}

// Fingerprint returns the fingerprint of what Pack would put in the archive of dir,
// or "" when dir changed too recently for one to be trusted.
func Fingerprint(dir string) (string, error) {
	entries, err := walk(dir)
	if err != nil {
		return "", err
	}
	f := NewFingerprinter("code")
	for _, e := range entries {
		f.Add(e.name, e.info)
	}
	return f.Sum(), nil
}
