package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// ManifestName is the name of the manifest, written last under the replica's prefix.
const ManifestName = storage.ManifestName

// uploader backs up the artifact paths and this attempt's log to the replica's prefix
// <destination>/<namespace>/<job>/<replica>/ (see storage's layout.go), one sync at a
// time.
type uploader struct {
	client  *storage.Client
	base    storage.URI
	paths   []string
	logFile string
	// logOffset is where this attempt's part of the log file starts: a restarted
	// container appends to the log file of the attempts before it.
	logOffset int64
	meta      storage.Manifest
	log       *logger
	progress  *progressRecorder
	usage     *usageRecorder // nil where the cgroup cannot be read

	mu            sync.Mutex // one sync at a time; guards what follows
	state         *storage.SyncState
	carried       map[string]storage.ManifestFile // files of the earlier attempts, by key
	logStored     storage.FileState               // this attempt's log, as last stored
	attempts      []storage.Attempt               // the earlier attempts, oldest first
	attempt       storage.Attempt                 // this one; Number 0 until claimed
	manifestDirty bool
}

// newUploader returns the uploader of cfg's artifacts, whose attempt's log starts at
// logOffset of the log file.
func newUploader(c *storage.Client, cfg Config, logOffset int64, log *logger) (*uploader, error) {
	dest, err := storage.ParseURI(cfg.ArtifactsDestination)
	if err != nil {
		return nil, err
	}
	base := storage.RunPrefix(dest, cfg.Namespace, cfg.JobName, cfg.Run).Join(cfg.Replica + "/")
	return &uploader{
		client:    c,
		base:      base,
		paths:     cfg.ArtifactsPaths,
		logFile:   cfg.LogFile(),
		logOffset: logOffset,
		meta:      storage.Manifest{Namespace: cfg.Namespace, Job: cfg.JobName, Replica: cfg.Replica, Container: cfg.ContainerName},
		log:       log,
		progress:  newProgressRecorder(base, cfg.ArtifactsPaths, log),
		usage:     newUsageRecorder(base, log),
		state:     storage.NewSyncState(),
		carried:   map[string]storage.ManifestFile{},
		attempt:   storage.Attempt{Pod: cfg.PodName, PodUID: cfg.PodUID, Container: cfg.ContainerName},
	}, nil
}

// sync uploads the changed artifact files, the progress record if the summaries among
// them changed it, the usage record, and the log, then, when final, the attempt's record, then the
// manifest if anything changed or final is set; the manifest says Final only if
// everything before it was stored. A nil exitCode means the command is still running.
func (u *uploader) sync(ctx context.Context, final bool, exitCode *int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	start := time.Now()
	var total storage.SyncStats
	var errs []error
	for _, p := range u.paths {
		stats, err := u.client.SyncDir(ctx, p, storage.ArtifactURI(u.base, p), u.state)
		total.Files += stats.Files
		total.Transferred += stats.Transferred
		total.Bytes += stats.Bytes
		errs = append(errs, err)
	}
	errs = append(errs, u.progress.record(ctx, u.client, u.state.Files()))
	errs = append(errs, u.usage.store(ctx, u.client, u.attempt.Number, u.log))
	if final {
		u.log.Printf("uploading artifacts and log to %s", u.base)
	}
	n, err := u.syncLog(ctx)
	total.Files++
	if n >= 0 {
		total.Transferred++
		total.Bytes += n
	}
	errs = append(errs, err)
	if final {
		errs = append(errs, u.writeRecord(ctx))
	}
	u.manifestDirty = u.manifestDirty || total.Transferred > 0
	if u.manifestDirty || final {
		// Final says the attempt's last files are all stored: not so if any failed.
		complete := final && errors.Join(errs...) == nil
		if err := u.writeManifest(ctx, complete, exitCode); err != nil {
			errs = append(errs, err)
		} else {
			u.manifestDirty = false
		}
	}
	err = errors.Join(errs...)
	if total.Transferred > 0 || err != nil || final {
		u.log.Printf("uploaded %d of %d files (%d bytes) in %v%s", total.Transferred, total.Files, total.Bytes,
			time.Since(start).Round(time.Millisecond), u.errSuffix(err))
	}
	return err
}

// syncLog uploads this attempt's part of the log file if it grew since the last
// upload, and returns the bytes uploaded, -1 if none.
func (u *uploader) syncLog(ctx context.Context) (int64, error) {
	dst := storage.AttemptLogURI(u.base, u.attempt.Number, u.meta.Container)
	if st, err := statSize(u.logFile); err == nil && u.logStored.Key == dst.Key && st-u.logOffset == u.logStored.Size {
		return -1, nil // a log only grows: the same size is the same content
	}
	stored, err := u.client.UploadSection(ctx, u.logFile, u.logOffset, dst)
	if err != nil {
		return -1, err
	}
	u.logStored = stored
	return stored.Size, nil
}

// errSuffix renders an error for the end of a log line.
func (u *uploader) errSuffix(err error) string {
	switch {
	case err == nil:
		return ""
	case storage.Denied(err):
		return "; " + deniedError(u.client, u.base.Bucket, err).Error()
	}
	return "; will retry: " + err.Error()
}

// writeManifest uploads the manifest of everything stored so far, by every attempt.
func (u *uploader) writeManifest(ctx context.Context, final bool, exitCode *int) error {
	m := u.meta
	m.Final, m.ExitCode, m.Updated = final, exitCode, time.Now().UTC()
	files := maps.Clone(u.carried)
	for path, f := range u.state.Files() {
		files[f.Key] = storage.ManifestFile{Path: path, Key: f.Key, Size: f.Size, SHA256: f.SHA256}
	}
	if f := u.logStored; f.Key != "" {
		files[f.Key] = storage.ManifestFile{Path: u.logFile, Key: f.Key, Size: f.Size, SHA256: f.SHA256}
	}
	m.Files = slices.SortedFunc(maps.Values(files), func(a, b storage.ManifestFile) int { return strings.Compare(a.Key, b.Key) })
	if m.Files == nil {
		m.Files = []storage.ManifestFile{}
	}
	m.Attempts = append(slices.Clone(u.attempts), u.attempt)
	if err := u.putJSON(ctx, u.base.Join(ManifestName), m); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	return nil
}

// putJSON uploads v as JSON to dst.
func (u *uploader) putJSON(ctx context.Context, dst storage.URI, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return u.client.PutObject(ctx, dst, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{ContentType: "application/json"})
}

// run syncs every interval until ctx is done, and whenever now receives.
func (u *uploader) run(ctx context.Context, stop <-chan struct{}, interval time.Duration, now <-chan struct{}) {
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
		case <-stop:
			return
		case <-tick:
		case <-now:
		}
		_ = u.sync(ctx, false, nil) // logged; the next sync retries
	}
}
