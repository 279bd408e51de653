package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// progressRecorder reads the event files among the uploaded artifacts, each from where
// it stopped, and stores the replica's progress record when it changed, so that the
// front ends show how far training has got without reading the event files.
type progressRecorder struct {
	dst   storage.URI
	roots []string // the artifact paths, which name the runs
	now   func() time.Time
	log   *logger

	readers map[string]*tfevents.Reader // by local path
	broken  map[string]bool             // files that failed to read, logged once
	tracker *tfevents.Tracker
	stored  []byte        // the record last stored, without its Updated time
	live    *liveProgress // nil unless this replica serves its progress
}

func newProgressRecorder(replica storage.URI, roots []string, log *logger) *progressRecorder {
	return &progressRecorder{dst: replica.Join(storage.ProgressName), roots: roots, now: time.Now, log: log,
		readers: map[string]*tfevents.Reader{}, broken: map[string]bool{}, tracker: tfevents.NewTracker()}
}

// record reads what was uploaded of the event files since the last call (files are
// the uploaded files by local path, with the size stored) and stores the record with
// c if it changed. A file that cannot be read is logged and left out.
func (r *progressRecorder) record(ctx context.Context, c *storage.Client, files map[string]storage.FileState) error {
	// Names sort by the time the writer opened the file: events are added in order.
	for _, path := range slices.Sorted(maps.Keys(files)) {
		run, ok := r.run(path)
		if !ok || r.broken[path] {
			continue
		}
		rd := r.readers[path]
		if rd == nil {
			rd = &tfevents.Reader{}
			r.readers[path] = rd
		}
		events, err := rd.ReadFile(path, files[path].Size)
		r.tracker.Add(run, events)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Stored by an earlier attempt and not restored: its events are lost to
			// this record.
		case err != nil:
			r.broken[path] = true
			r.log.Printf("reading the summaries of %s, left out of the progress record: %v", path, err)
		}
	}
	return r.store(ctx, c)
}

// run names the run of an event file: its directory relative to its artifact path;
// false for a file that is not an event file.
func (r *progressRecorder) run(path string) (string, bool) {
	if !tfevents.IsEventFile(path) {
		return "", false
	}
	dir := filepath.Dir(path)
	for _, root := range r.roots {
		if rel, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel), true
		}
	}
	return filepath.ToSlash(strings.TrimPrefix(dir, "/")), true
}

// store uploads the record if it differs from the one stored.
func (r *progressRecorder) store(ctx context.Context, c *storage.Client) error {
	p := r.tracker.Progress()
	if p == nil {
		return nil
	}
	r.live.set(p)
	unstamped, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if bytes.Equal(unstamped, r.stored) {
		return nil
	}
	p.Updated = r.now().UTC()
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.PutObject(ctx, r.dst, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("writing the progress record: %w", err)
	}
	r.stored = unstamped
	return nil
}
