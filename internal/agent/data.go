package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// fetchData copies every data source into its directory, and verifies a data set that
// tfk8s submit stored against its manifest: every file's size and SHA-256, and the
// set's digest, which its prefix is named after. Other prefixes are fetched as they
// are, and the log says that they were not verified.
func fetchData(ctx context.Context, c *storage.Client, cfg Config, log *logger) error {
	if len(cfg.Data) == 0 {
		return nil
	}
	c = c.WithBackoff(fetchBackoff)
	for _, d := range cfg.Data {
		src, err := storage.ParseURI(d.Source)
		if err != nil {
			return fail(ExitUsage, err)
		}
		start := time.Now()
		m, why, err := readDataManifest(ctx, c, src)
		if err != nil {
			return storageFailure(c, src.Bucket, fmt.Errorf("fetching data: %w", err))
		}
		stats, err := c.DownloadPrefix(ctx, src, d.Path)
		if err != nil {
			return storageFailure(c, src.Bucket, fmt.Errorf("fetching data: %w", err))
		}
		if m != nil {
			if err := verifyData(src, d.Path, m); err != nil {
				return err
			}
			why = fmt.Sprintf("verified: %d files match its manifest, digest %s", len(m.Files), m.Digest)
		}
		log.Printf("data %s: %d files in %s, %d fetched (%d bytes) in %v; %s", src, stats.Files, d.Path, stats.Transferred,
			stats.Bytes, time.Since(start).Round(time.Millisecond), why)
	}
	return nil
}

// readDataManifest reads the manifest of the data set at src; nil, and why, when it has
// none to verify it with.
func readDataManifest(ctx context.Context, c *storage.Client, src storage.URI) (*storage.DataManifest, string, error) {
	u, ok := storage.DataManifestURI(src)
	if !ok {
		return nil, "unverified: not a data set stored by tfk8s submit (datasets/sha256-<digest>/), so no manifest to check it against", nil
	}
	var buf bytes.Buffer
	_, err := c.Download(ctx, u, &buf)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, "unverified: no manifest beside it at " + u.String(), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the data manifest: %w", err)
	}
	var m storage.DataManifest
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m.Digest == "" {
		return nil, "unverified: its marker " + u.String() + " lists no files (written by an older tfk8s)", nil
	}
	return &m, "", nil
}

// verifyData checks the files fetched from src into dir against the set's manifest.
func verifyData(src storage.URI, dir string, m *storage.DataManifest) error {
	key := strings.TrimSuffix(src.Key, "/")
	named := strings.TrimPrefix(key[strings.LastIndex(key, "/")+1:], "sha256-")
	if got := storage.DataSetDigest(m.Files); got != m.Digest || m.Digest != named {
		return fail(ExitDigestMismatch, fmt.Errorf("data %s: its manifest lists files of digest %s, records %s, and the set is named %s: refusing to run on it",
			src, got, m.Digest, named))
	}
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) {
			return fail(ExitDigestMismatch, fmt.Errorf("data %s: its manifest lists %q, outside the set", src, f.Path))
		}
		local := filepath.Join(dir, filepath.FromSlash(f.Path))
		st, err := os.Stat(local)
		if err != nil {
			return fail(ExitDigestMismatch, fmt.Errorf("data %s: file %s is listed in its manifest but was not fetched: %w", src, f.Path, err))
		}
		sum, err := pack.FileSHA256(local)
		if err != nil {
			return fail(ExitInternal, fmt.Errorf("verifying data file %s: %w", local, err))
		}
		if st.Size() != f.Size || sum != f.SHA256 {
			return fail(ExitDigestMismatch, fmt.Errorf("data %s: file %s has %d bytes, SHA-256 %s; its manifest says %d bytes, SHA-256 %s: refusing to run on it",
				src, f.Path, st.Size(), sum, f.Size, f.SHA256))
		}
	}
	return nil
}
