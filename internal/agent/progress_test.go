package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// eventFile returns the content of the one event file in tfevents' testdata/dir.
func eventFile(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "tfevents", "testdata", dir, "events.out.tfevents.*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("want one event file in testdata/%s, found %v (%v)", dir, files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(files[0]), b
}

// progressHarness uploads an artifact path and records its progress as the uploader
// does, against a test S3 server, with a clock the test moves.
type progressHarness struct {
	t      *testing.T
	ctx    context.Context
	client *storage.Client
	root   string
	base   storage.URI
	state  *storage.SyncState
	rec    *progressRecorder
	clock  time.Time
	logs   bytes.Buffer
}

func newProgressHarness(t *testing.T) *progressHarness {
	srv := s3server.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h := &progressHarness{t: t, ctx: ctx, client: srv.Client(t), root: filepath.Join(t.TempDir(), "model"),
		base:  storage.ReplicaPrefix(storage.URI{Bucket: srv.Bucket, Key: "runs/"}, "team", "mnist", "chief-0"),
		state: storage.NewSyncState(), clock: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	h.rec = newProgressRecorder(h.base, []string{h.root}, &logger{out: &h.logs})
	h.rec.now = func() time.Time { return h.clock }
	return h
}

// write writes a file under the artifact path.
func (h *progressHarness) write(rel string, b []byte) {
	h.t.Helper()
	p := filepath.Join(h.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// sync uploads the artifact path and records the progress, at the clock's time
// advanced by a second.
func (h *progressHarness) sync() {
	h.t.Helper()
	h.clock = h.clock.Add(time.Second)
	if _, err := h.client.SyncDir(h.ctx, h.root, storage.ArtifactURI(h.base, h.root), h.state); err != nil {
		h.t.Fatal(err)
	}
	if err := h.rec.record(h.ctx, h.client, h.state.Files()); err != nil {
		h.t.Fatal(err)
	}
}

// stored reads the progress record; nil if there is none.
func (h *progressHarness) stored() *tfevents.Progress {
	h.t.Helper()
	var buf bytes.Buffer
	if _, err := h.client.Download(h.ctx, h.base.Join(storage.ProgressName), &buf); err != nil {
		return nil
	}
	p := &tfevents.Progress{}
	if err := json.Unmarshal(buf.Bytes(), p); err != nil {
		h.t.Fatalf("progress.json: %v\n%s", err, buf.Bytes())
	}
	return p
}

func TestProgressRecordFollowsTheSummaries(t *testing.T) {
	h := newProgressHarness(t)
	h.write("checkpoint", []byte("ckpt-1"))
	h.sync()
	if p := h.stored(); p != nil {
		t.Fatalf("a progress record without event files: %+v", p)
	}

	// The trainer has written part of its summaries, the last record torn.
	name, full := eventFile(t, "scalars")
	h.write("logs/"+name, full[:len(full)-20])
	h.sync()
	p := h.stored()
	if p == nil {
		t.Fatalf("no progress record; agent log:\n%s", h.logs.String())
	}
	first := h.clock
	if p.Step != 4 || p.Scalars["logs/loss"].Value != 0.4000000059604645 || len(p.Series["logs/loss"]) != 5 || !p.Updated.Equal(first) {
		t.Errorf("after the torn file: step %d, logs/loss %+v, %d points, updated %v; want step 4, 0.4, 5 points, %v",
			p.Step, p.Scalars["logs/loss"], len(p.Series["logs/loss"]), p.Updated, first)
	}
	if _, ok := p.Scalars["logs/legacy"]; ok {
		t.Error("the torn record's scalar is in the record")
	}

	// Nothing new: the record is not written again.
	h.sync()
	if p := h.stored(); !p.Updated.Equal(first) {
		t.Errorf("record rewritten at %v without a change, first written at %v", p.Updated, first)
	}

	// The writer completes the file, and Keras writes its runs beside it.
	h.write("logs/"+name, full)
	trainName, train := eventFile(t, "fit/train")
	h.write("logs/fit/train/"+trainName, train)
	h.sync()
	p = h.stored()
	if p.Step != 7 || p.Scalars["logs/legacy"].Value != 0.25 || !p.Updated.Equal(h.clock) {
		t.Errorf("after the complete file: step %d, logs/legacy %+v, updated %v; want step 7, 0.25, %v", p.Step, p.Scalars["logs/legacy"], p.Updated, h.clock)
	}
	if last, ok := p.Scalars["logs/fit/train/epoch_loss"]; !ok || last.Step != 2 {
		t.Errorf("logs/fit/train/epoch_loss %+v (%v), want its step 2: runs are named by directory", last, ok)
	}
	if got := len(p.Series["logs/loss"]); got != 5 {
		t.Errorf("logs/loss has %d points, want 5: each event read once", got)
	}
}

func TestProgressRecordSkipsABrokenFile(t *testing.T) {
	h := newProgressHarness(t)
	name, full := eventFile(t, "scalars")
	bad := bytes.Clone(full)
	bad[len(bad)-10] ^= 1 // in the data of the last record
	h.write("logs/"+name, bad)
	h.sync()
	p := h.stored()
	if p == nil || p.Step != 4 {
		t.Fatalf("progress %+v, want the events before the bad record, to step 4", p)
	}
	h.sync()
	if got := bytes.Count(h.logs.Bytes(), []byte("data checksum")); got != 1 {
		t.Errorf("the bad record was logged %d times, want once:\n%s", got, h.logs.String())
	}
}
