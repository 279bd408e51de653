package storage

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// DownloadPrefix copies the objects under the prefix src into dir, keeping their paths
// relative to the prefix. A src that is not a prefix and names an object is copied to
// dir/<its base name>; one that names no object is taken as a prefix. An empty prefix is
// an error wrapping ErrNotFound. A local file already identical to its object (same
// size and the same SHA-256 recorded by tfk8s, or the same MD5 ETag) is not downloaded
// again. Keys that would land outside dir are refused.
func (c *Client) DownloadPrefix(ctx context.Context, src URI, dir string) (SyncStats, error) {
	var objs []Object
	prefix := src
	if !src.IsPrefix() {
		obj, err := c.Stat(ctx, src)
		switch {
		case err == nil:
			objs = []Object{obj}
			prefix = URI{Bucket: src.Bucket, Key: path.Dir(src.Key) + "/"}
			if prefix.Key == "./" {
				prefix.Key = ""
			}
		case errors.Is(err, ErrNotFound):
			prefix = src.Dir()
		default:
			return SyncStats{}, fmt.Errorf("downloading %s: %w", src, err)
		}
	}
	if objs == nil {
		var err error
		if objs, err = c.List(ctx, prefix); err != nil {
			return SyncStats{}, fmt.Errorf("downloading %s: %w", src, err)
		}
	}
	if len(objs) == 0 {
		return SyncStats{}, fmt.Errorf("downloading %s: no objects under it: %w", src, ErrNotFound)
	}

	var stats SyncStats
	var mu sync.Mutex
	err := forEach(ctx, len(objs), func(ctx context.Context, i int) error {
		obj := objs[i]
		rel := strings.TrimPrefix(obj.URI.Key, prefix.Key)
		if rel == "" || strings.HasSuffix(rel, "/") {
			return nil // a directory marker
		}
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			return fmt.Errorf("refusing %s: its key leads outside %s", obj.URI, dir)
		}
		local := filepath.Join(dir, filepath.FromSlash(rel))
		if st, err := os.Stat(local); err == nil && st.Size() == obj.Size && obj.SHA256 == "" && strings.Contains(obj.ETag, "-") {
			// A multipart ETag is no digest of the content: ask for the SHA-256
			// recorded at upload instead.
			if full, err := c.Stat(ctx, obj.URI); err == nil {
				obj.SHA256 = full.SHA256
			}
		}
		if identical(local, obj) {
			stats.add(&mu, 1, 0, 0)
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return err
		}
		if err := c.DownloadFile(ctx, obj.URI, local); err != nil {
			return err
		}
		stats.add(&mu, 1, 1, obj.Size)
		return nil
	})
	if err != nil {
		return stats, fmt.Errorf("downloading %s to %s: %w", src, dir, err)
	}
	return stats, nil
}

// identical reports whether the local file has the object's content, judged by size
// and a digest, without downloading it. Multipart ETags are not content digests; for
// those only the SHA-256 recorded by tfk8s is trusted.
func identical(local string, obj Object) bool {
	st, err := os.Stat(local)
	if err != nil || !st.Mode().IsRegular() || st.Size() != obj.Size {
		return false
	}
	if obj.SHA256 != "" {
		sum, err := pack.FileSHA256(local)
		return err == nil && sum == obj.SHA256
	}
	if len(obj.ETag) != 2*md5.Size || strings.Contains(obj.ETag, "-") {
		return false
	}
	f, err := os.Open(local)
	if err != nil {
		return false
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == obj.ETag
}
