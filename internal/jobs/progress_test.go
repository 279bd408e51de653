package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

func TestProgressPrefersTheLeadReplica(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := &tfv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "team", UID: "0c5e2a7b-1d2e-4f00-9a7b-3c1d2e4f5a6b"},
		Spec: tfv1.TFJobSpec{
			TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
				tfv1.ReplicaTypeChief:     {Replicas: ptr.To[int32](1)},
				tfv1.ReplicaTypeWorker:    {Replicas: ptr.To[int32](2)},
				tfv1.ReplicaTypeEvaluator: {Replicas: ptr.To[int32](1)},
			},
			Artifacts: &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"},
		},
	}
	base := ArtifactsBase(job)
	if want := "runs/team/mnist/0c5e2a7b/"; base.Key != want {
		t.Fatalf("the job's run prefix is %s, want %s", base.Key, want)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	put := func(replica string, step int64, updated time.Time) {
		t.Helper()
		b, err := json.Marshal(&tfevents.Progress{Step: step, Updated: updated, Scalars: map[string]tfevents.Last{"logs/train/loss": {Step: step, Value: 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
		u := base.Join(replica+"/", storage.ProgressName)
		if err := c.PutObject(ctx, u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(wantReplica string, wantStep int64) {
		t.Helper()
		p, err := Progress(ctx, c, job, base)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case wantReplica == "" && p != nil:
			t.Errorf("progress of %s, want none", p.Replica)
		case wantReplica != "" && (p == nil || p.Replica != wantReplica || p.Step != wantStep):
			t.Errorf("progress %+v, want %s's at step %d", p, wantReplica, wantStep)
		}
	}

	check("", 0)
	put("worker-1", 30, t0)
	put("evaluator-0", 20, t0.Add(time.Minute))
	check("evaluator-0", 20) // the one updated last
	put("worker-0", 10, t0)
	check("worker-0", 10)
	put("chief-0", 5, t0)
	check("chief-0", 5)

	// Every replica's record, the lead replicas' first, as many as asked for.
	for _, tc := range []struct {
		limit int
		want  []string
		more  bool
	}{{10, []string{"chief-0", "worker-0", "worker-1", "evaluator-0"}, false}, {2, []string{"chief-0", "worker-0"}, true}} {
		found, more, err := ReplicaProgress(ctx, c, job, base, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range found {
			got = append(got, p.Replica)
		}
		if d := cmp.Diff(tc.want, got); d != "" || more != tc.more {
			t.Errorf("ReplicaProgress(limit %d): more %v, want %v; replicas (-want +got):\n%s", tc.limit, more, tc.more, d)
		}
		if lead := LeadProgress(found); lead.Replica != "chief-0" {
			t.Errorf("LeadProgress: %s's, want chief-0's", lead.Replica)
		}
	}

	job.Spec.Artifacts = nil
	check("", 0)
	if found, _, err := ReplicaProgress(ctx, c, job, base, 10); found != nil || err != nil {
		t.Errorf("ReplicaProgress of a job without artifacts: %v, %v; want nothing", found, err)
	}
}

// TestProgressOfAJobOlderThanRuns: the replicas of a job that a controller older
// than runs started stored under the job's prefix; LocateFiles finds them there, and
// their records are read from it.
func TestProgressOfAJobOlderThanRuns(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := &tfv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "team", UID: "0c5e2a7b-1d2e-4f00-9a7b-3c1d2e4f5a6b"},
		Spec: tfv1.TFJobSpec{
			TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {Replicas: ptr.To[int32](2)}},
			Artifacts:      &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"},
		},
	}
	b, err := json.Marshal(&tfevents.Progress{Step: 40, Scalars: map[string]tfevents.Last{"loss": {Step: 40, Value: 0.25}}})
	if err != nil {
		t.Fatal(err)
	}
	legacy := "runs/team/mnist/worker-1/" + storage.ProgressName
	if err := c.PutObject(ctx, storage.URI{Bucket: srv.Bucket, Key: legacy}, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	base, err := LocateFiles(ctx, c, job)
	if err != nil || base.Key != "runs/team/mnist/" {
		t.Fatalf("LocateFiles: %s, %v; want the job's prefix runs/team/mnist/", base.Key, err)
	}
	found, _, err := ReplicaProgress(ctx, c, job, base, 10)
	if err != nil || len(found) != 1 || found[0].Replica != "worker-1" || found[0].Step != 40 {
		t.Errorf("ReplicaProgress: %v, %v; want worker-1's record at step 40 from %s", found, err, legacy)
	}
}

func TestLeadReplica(t *testing.T) {
	for _, tc := range []struct {
		replicas []string
		want     string
	}{
		{[]string{"evaluator-0", "ps-0", "worker-0", "chief-0"}, "chief-0"},
		{[]string{"ps-0", "worker-1", "worker-0"}, "worker-0"},
		{[]string{"worker-1", "evaluator-0"}, "worker-1"},
		{nil, ""},
	} {
		if got, ok := LeadReplica(tc.replicas); got != tc.want || ok != (tc.want != "") {
			t.Errorf("LeadReplica(%v) = %q, %v; want %q", tc.replicas, got, ok, tc.want)
		}
	}
}
