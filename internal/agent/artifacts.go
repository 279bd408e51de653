package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// ManifestName is the name of the manifest, written last under the replica's prefix.
const ManifestName = "manifest.json"

// Manifest lists what a replica has stored: every artifact and log file uploaded, with
// its size and SHA-256. It is written after the files it lists, so it never names a
// file not yet stored.
type Manifest struct {
	Namespace string `json:"namespace"`
	Job       string `json:"job"`
	Replica   string `json:"replica"`
	Container string `json:"container"`
	// Final is true once the command has exited and the last upload is done.
	Final bool `json:"final"`
	// ExitCode is the command's, once it has exited.
	ExitCode *int `json:"exitCode,omitempty"`
	// Updated is when the manifest was written.
	Updated time.Time `json:"updated"`
	// Files are in key order.
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one stored file.
type ManifestFile struct {
	// Path is the file's path in the container.
	Path string `json:"path"`
	// Key is its object key, in the destination's bucket.
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// uploader backs up the artifact paths and the log file to
// <destination>/<namespace>/<job>/<replica>/, one sync at a time.
type uploader struct {
	client  *storage.Client
	base    storage.URI
	paths   []string
	logFile string
	meta    Manifest
	log     *logger

	mu            sync.Mutex // one sync at a time
	state         *storage.SyncState
	manifestDirty bool
}

// newUploader returns the uploader of cfg's artifacts.
func newUploader(c *storage.Client, cfg Config, log *logger) (*uploader, error) {
	dest, err := storage.ParseURI(cfg.ArtifactsDestination)
	if err != nil {
		return nil, err
	}
	return &uploader{
		client:  c,
		base:    dest.Join(cfg.Namespace, cfg.JobName, cfg.Replica),
		paths:   cfg.ArtifactsPaths,
		logFile: cfg.LogFile(),
		meta:    Manifest{Namespace: cfg.Namespace, Job: cfg.JobName, Replica: cfg.Replica, Container: cfg.ContainerName},
		log:     log,
		state:   storage.NewSyncState(),
	}, nil
}

// artifactURI is where the artifact path p goes: .../artifacts/<p without leading />.
func (u *uploader) artifactURI(p string) storage.URI {
	return u.base.Join("artifacts", strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "/"))
}

// logURI is where the log file goes: .../logs/<container>.log.
func (u *uploader) logURI() storage.URI {
	return u.base.Join("logs", filepath.Base(u.logFile))
}

// manifestURI is where the manifest goes.
func (u *uploader) manifestURI() storage.URI {
	return u.base.Join(ManifestName)
}

// resume reads the manifest of an earlier run of this replica, if any, so that files
// it stored are not uploaded again after a container restart.
func (u *uploader) resume(ctx context.Context) {
	var buf bytes.Buffer
	c := u.client.WithBackoff(storage.Backoff{Initial: 200 * time.Millisecond, Max: time.Second, Attempts: 3})
	if _, err := c.Download(ctx, u.manifestURI(), &buf); err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			u.log.Printf("reading the previous manifest: %v", err)
		}
		return
	}
	var m Manifest
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		u.log.Printf("ignoring the previous manifest: %v", err)
		return
	}
	for _, f := range m.Files {
		u.state.Set(f.Path, storage.FileState{Key: f.Key, Size: f.Size, SHA256: f.SHA256})
	}
	u.log.Printf("previous manifest lists %d files: only changed files are uploaded", len(m.Files))
}

// sync uploads the changed artifact files and the log, then the manifest if anything
// changed or final is set. A nil exitCode means the command is still running.
func (u *uploader) sync(ctx context.Context, final bool, exitCode *int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	start := time.Now()
	var total storage.SyncStats
	var errs []error
	syncOne := func(local string, dst storage.URI) {
		stats, err := u.client.SyncDir(ctx, local, dst, u.state)
		total.Files += stats.Files
		total.Transferred += stats.Transferred
		total.Bytes += stats.Bytes
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range u.paths {
		syncOne(p, u.artifactURI(p))
	}
	if final {
		u.log.Printf("uploading artifacts and log to %s", u.base)
	}
	syncOne(u.logFile, u.logURI())
	u.manifestDirty = u.manifestDirty || total.Transferred > 0
	if u.manifestDirty || final {
		if err := u.writeManifest(ctx, final, exitCode); err != nil {
			errs = append(errs, err)
		} else {
			u.manifestDirty = false
		}
	}
	err := errors.Join(errs...)
	if total.Transferred > 0 || err != nil || final {
		u.log.Printf("uploaded %d of %d files (%d bytes) in %v%s", total.Transferred, total.Files, total.Bytes,
			time.Since(start).Round(time.Millisecond), errSuffix(err))
	}
	return err
}

// errSuffix renders an error for the end of a log line.
func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; will retry: " + err.Error()
}

// writeManifest uploads the manifest of everything stored so far.
func (u *uploader) writeManifest(ctx context.Context, final bool, exitCode *int) error {
	m := u.meta
	m.Final, m.ExitCode, m.Updated = final, exitCode, time.Now().UTC()
	m.Files = []ManifestFile{}
	for path, f := range u.state.Files() {
		m.Files = append(m.Files, ManifestFile{Path: path, Key: f.Key, Size: f.Size, SHA256: f.SHA256})
	}
	slices.SortFunc(m.Files, func(a, b ManifestFile) int { return strings.Compare(a.Key, b.Key) })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := u.client.PutObject(ctx, u.manifestURI(), bytes.NewReader(b), int64(len(b)), storage.UploadOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	return nil
}

// run syncs every interval until ctx is done, and whenever now receives.
func (u *uploader) run(ctx context.Context, interval time.Duration, now <-chan struct{}) {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-now:
		}
		_ = u.sync(ctx, false, nil) // logged; the next sync retries
	}
}
