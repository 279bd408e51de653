package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestCacheKeepsRecordsByETag: a listing with the cache reads the records S3 has, and
// a record rewritten since (end.json by tfk8s delete, then the record pod) is read
// again rather than taken from the cache; the records of a deleted run leave it.
func TestCacheKeepsRecordsByETag(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	storeRuns(t, c, dest, "team", 2)
	dir := t.TempDir()
	states := func() string {
		t.Helper()
		cache := OpenCache(dir, dest, "team")
		found, err := List(ctx, c, dest, nil, Query{Namespace: "team", Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if err := cache.Save(); err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range found {
			s = append(s, r.Name+"="+r.State)
		}
		return strings.Join(s, " ")
	}
	if got, want := states(), "job-0000=Succeeded job-0001=Succeeded"; got != want {
		t.Fatalf("first listing: %s, want %s", got, want)
	}
	if cached := OpenCache(dir, dest, "team"); len(cached.entries) != 4 {
		t.Errorf("the cache holds %d records, want 4: run.json and end.json of 2 runs", len(cached.entries))
	}

	run := storage.RunPrefix(dest, "team", "job-0001", tfjob.RunID("00000001-0000-0000-0000-000000000000"))
	end, _ := storage.Marshal(tfjob.RunEnd{Completed: time.Now(), State: "Failed"})
	if err := c.PutObject(ctx, run.Join(storage.RunEndName), strings.NewReader(string(end)), int64(len(end)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := states(), "job-0000=Succeeded job-0001=Failed"; got != want {
		t.Errorf("after end.json was rewritten: %s, want %s", got, want)
	}

	objs, err := c.List(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := Delete(ctx, c, objs); err != nil {
		t.Fatal(err)
	}
	if got, want := states(), "job-0000=Succeeded"; got != want {
		t.Errorf("after a run was deleted: %s, want %s", got, want)
	}
	if cached := OpenCache(dir, dest, "team"); len(cached.entries) != 2 {
		t.Errorf("the cache holds %d records after a run was deleted, want 2", len(cached.entries))
	}
}

// TestListReadsTheLossFromTheEnd: a finished run's step and loss come from its
// end.json, so listing reads no progress.json (one deleted changes nothing); a query
// of named runs with their series lists those alone, read from progress.json whole.
func TestListReadsTheLossFromTheEnd(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	storeRuns(t, c, dest, "team", 3)
	first := storage.RunPrefix(dest, "team", "job-0000", tfjob.RunID("00000000-0000-0000-0000-000000000000"))
	if err := c.Remove(ctx, srv.Bucket, []string{first.Join("worker-0/", storage.ProgressName).Key}); err != nil {
		t.Fatal(err)
	}
	found, err := List(ctx, c, dest, nil, Query{Namespace: "team"})
	if err != nil || len(found) != 3 {
		t.Fatalf("listed %d runs: %v", len(found), err)
	}
	for _, r := range found {
		if r.Step == nil || *r.Step != 250 || r.Loss == nil || *r.Loss != 0.25 || r.Progress.Series != nil {
			t.Errorf("run %s/%s: step %v, loss %v, %d series; want step 250 and loss 0.25 from its end.json, no series", r.Name, r.Run, r.Step, r.Loss, len(r.Progress.Series))
		}
	}

	found, err = List(ctx, c, dest, nil, Query{Namespace: "team", Names: []string{"job-0000/00000000", "job-0002/00000002"}, Series: true})
	if err != nil || len(found) != 2 || found[0].Name != "job-0000" || found[1].Name != "job-0002" {
		t.Fatalf("listed %v (%v), want job-0000 and job-0002", found, err)
	}
	if found[0].Progress != nil {
		t.Errorf("job-0000's series: %v, want none (its progress.json is gone)", found[0].Progress)
	}
	if p := found[1].Progress; p == nil || len(p.Series["train/epoch_loss"]) != 250 {
		t.Errorf("job-0002's progress %v, want its 250 points of train/epoch_loss", p)
	}
}
