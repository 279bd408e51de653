package storage

import (
	"context"
	"fmt"
	"io"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// Prefixes of the objects submit uploads, in the configured bucket.
const (
	CodePrefix = "code"
	DataPrefix = "datasets"
)

// CodeArchive is the code directory's archive: packed, or known by its digest from the
// digest cache and packed only if the storage turns out not to have it.
type CodeArchive struct {
	pack.Archive
	dir string
	// fingerprint is the directory's in the digest cache, "" if it changed too
	// recently to have one.
	fingerprint string
	cache       pack.DigestCache
}

// PackCode packs dir, unless the digest cache knows its archive's digest.
func PackCode(dir string, cache pack.DigestCache) (CodeArchive, error) {
	fp, err := pack.Fingerprint(dir)
	if err != nil {
		return CodeArchive{}, fmt.Errorf("packing DIR: %w", err)
	}
	a := CodeArchive{dir: dir, fingerprint: fp, cache: cache}
	if d, ok := cache.Get(fp); ok {
		a.SHA256, a.Size = d.Digest, d.Size
		return a, nil
	}
	if a.Archive, err = pack.Pack(dir, ""); err != nil {
		return CodeArchive{}, fmt.Errorf("packing DIR: %w", err)
	}
	return a, nil
}

// Remove deletes the archive's file, if it was packed.
func (a CodeArchive) Remove() {
	if a.Path != "" {
		_ = a.Archive.Remove()
	}
}

// Remember records in the cache that the directory is stored under its digest.
func (a CodeArchive) Remember() {
	if a.fingerprint != "" {
		a.cache.Put(a.fingerprint, pack.CachedDigest{Digest: a.SHA256, Size: a.Size})
	}
}

// UploadCode uploads the code archive to dst unless the storage has it already (same
// content, same key), and returns the bytes uploaded.
func UploadCode(ctx context.Context, c *Client, a *CodeArchive, dst URI, errOut io.Writer) (int64, error) {
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
	err = c.UploadFile(ctx, a.Path, dst, UploadOptions{Progress: bar.update, SHA256: a.SHA256, ContentType: "application/gzip"})
	bar.finish()
	if err != nil {
		return 0, fmt.Errorf("uploading code: %w", err)
	}
	fmt.Fprintf(errOut, "code uploaded: %s to %s\n", FormatBytes(a.Size), dst)
	return a.Size, nil
}
