package runs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// Cache keeps the run records that List read, run.json and end.json, by their key and
// ETag: each is written once, so a run's records are read from S3 once and the next
// listings read only the listing and the progress records, which still change.
type Cache struct {
	path string

	mu      sync.Mutex // guards what follows
	entries map[string]cacheEntry
	used    map[string]cacheEntry
}

type cacheEntry struct {
	ETag string          `json:"etag"`
	Body json.RawMessage `json:"body"`
}

// DefaultCacheDir is where the tfk8s command keeps its caches of run records:
// $XDG_CACHE_HOME/tfk8s/runs, else ~/.cache/tfk8s/runs; "" when the user has no cache
// directory.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "tfk8s", "runs")
}

// OpenCache reads the cache of the runs listed under destination in namespace ("" for
// every namespace) from dir; a missing or unreadable file is an empty cache, and dir ""
// keeps none (nil).
func OpenCache(dir string, destination storage.URI, namespace string) *Cache {
	if dir == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(destination.Dir().String() + "\x00" + namespace))
	c := &Cache{path: filepath.Join(dir, hex.EncodeToString(sum[:8])+".json"), entries: map[string]cacheEntry{}, used: map[string]cacheEntry{}}
	if b, err := os.ReadFile(c.path); err == nil && json.Unmarshal(b, &c.entries) != nil {
		c.entries = map[string]cacheEntry{}
	}
	return c
}

// get returns the body of obj if the cache holds it at obj's ETag.
func (c *Cache) get(obj storage.Object) ([]byte, bool) {
	if c == nil || obj.ETag == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[obj.URI.String()]
	if !ok || e.ETag != obj.ETag {
		return nil, false
	}
	c.used[obj.URI.String()] = e
	return e.Body, true
}

// put keeps the body of obj, a JSON document read at obj's ETag.
func (c *Cache) put(obj storage.Object, body []byte) {
	if c == nil || obj.ETag == "" || !json.Valid(body) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used[obj.URI.String()] = cacheEntry{ETag: obj.ETag, Body: body}
}

// Save writes the records used since the cache was opened, and only those, so that
// the records of deleted runs go: to a temporary file renamed into place.
func (c *Cache) Save() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	b, err := json.Marshal(c.used)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), ".runs-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), c.path)
}
