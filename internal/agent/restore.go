package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// restoreParallelism is how many artifact files are restored at once.
const restoreParallelism = 4

// restoreStats counts what a restore did.
type restoreStats struct {
	mu       sync.Mutex
	restored int
	bytes    int64
	present  int      // already there with the stored content
	kept     int      // there with other content: the local file is newer
	skipped  []string // stored content not the manifest's, or gone
}

// restore puts the artifacts an earlier attempt stored back into the artifact paths
// before the command starts, so that a retried replica resumes from its latest
// checkpoint instead of starting over (and then overwriting the newer checkpoint). A
// retry restores from the replica's own prefix, with prev its manifest; the first
// attempt of a job resumed from another restores from that job's replica. Only files
// missing locally are restored: a file that survived a container restart is as new as
// any. Each is checked against the manifest's SHA-256 before it is put in place.
func (u *uploader) restore(ctx context.Context, cfg Config, prev *storage.Manifest) error {
	src, m := u.base, prev
	if u.attempt.Number == 1 {
		if cfg.ArtifactsResumeFrom == "" {
			return nil
		}
		from, err := storage.ParseURI(cfg.ArtifactsResumeFrom)
		if err != nil {
			return fail(ExitUsage, err)
		}
		src = from.Join(cfg.Replica + "/")
		if m, err = readManifest(ctx, u.client.WithBackoff(fetchBackoff), src); err != nil {
			return storageFailure(u.client, src.Bucket, fmt.Errorf("reading the manifest to resume from: %w", err))
		}
	}
	if m == nil {
		u.log.Printf("nothing to restore: %s holds no manifest of replica %s", src, cfg.Replica)
		return nil
	}
	start := time.Now()
	stats, err := u.restoreFiles(ctx, src, m)
	if err != nil {
		return storageFailure(u.client, src.Bucket, fmt.Errorf("restoring artifacts from %s: %w", src, err))
	}
	u.log.Printf("restored %d files (%d bytes) from %s in %v; %d already present, %d kept as newer locally",
		stats.restored, stats.bytes, src.Join("artifacts/"), time.Since(start).Round(time.Millisecond), stats.present, stats.kept)
	for _, s := range stats.skipped {
		u.log.Printf("not restored: %s", s)
	}
	return nil
}

// restoreFiles restores the manifest's artifacts under the artifact paths.
func (u *uploader) restoreFiles(ctx context.Context, src storage.URI, m *storage.Manifest) (*restoreStats, error) {
	var files []storage.ManifestFile
	for _, f := range m.Files {
		if storage.ArtifactURI(src, f.Path).Key == f.Key && u.underPaths(f.Path) {
			files = append(files, f)
		}
	}
	stats := &restoreStats{}
	next := make(chan storage.ManifestFile)
	errs := make([]error, restoreParallelism)
	var wg sync.WaitGroup
	for i := range restoreParallelism {
		wg.Go(func() {
			for f := range next {
				if errs[i] == nil {
					errs[i] = u.restoreFile(ctx, src, f, stats)
				}
			}
		})
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	return stats, errors.Join(errs...)
}

// underPaths reports whether p is one of the artifact paths or under one.
func (u *uploader) underPaths(p string) bool {
	for _, root := range u.paths {
		if rel, err := filepath.Rel(root, p); err == nil && filepath.IsLocal(rel) {
			return true
		}
	}
	return false
}

// restoreFile restores one file unless it is there, through a temporary file renamed
// into place once its SHA-256 is the manifest's.
func (u *uploader) restoreFile(ctx context.Context, src storage.URI, f storage.ManifestFile, stats *restoreStats) error {
	if st, err := os.Lstat(f.Path); err == nil {
		sum, _ := pack.FileSHA256(f.Path)
		stats.mu.Lock()
		defer stats.mu.Unlock()
		if st.Size() == f.Size && sum == f.SHA256 {
			stats.present++
		} else {
			stats.kept++
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return fail(ExitInternal, fmt.Errorf("restoring %s: %w", f.Path, err))
	}
	tmp := f.Path + ".tfk8s-restore"
	defer os.Remove(tmp)
	obj := storage.URI{Bucket: src.Bucket, Key: f.Key}
	err := u.client.WithBackoff(fetchBackoff).DownloadFile(ctx, obj, tmp)
	skip := func(why string) error {
		stats.mu.Lock()
		defer stats.mu.Unlock()
		stats.skipped = append(stats.skipped, f.Path+": "+why)
		return nil
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return skip("listed in the manifest but no longer stored")
	case err != nil:
		return err
	}
	if sum, err := pack.FileSHA256(tmp); err != nil || sum != f.SHA256 {
		return skip(fmt.Sprintf("stored content (sha256 %s) is not the manifest's %s", sum, f.SHA256))
	}
	if err := os.Rename(tmp, f.Path); err != nil {
		return fail(ExitInternal, fmt.Errorf("restoring %s: %w", f.Path, err))
	}
	stats.mu.Lock()
	defer stats.mu.Unlock()
	stats.restored++
	stats.bytes += f.Size
	return nil
}
