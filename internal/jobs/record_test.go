package jobs

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestNewRunRecord: the record holds the job as submitted, to submit it again: its
// spec and labels, without the status and what the API server manages.
func TestNewRunRecord(t *testing.T) {
	created := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	job := testutil.MakeTFJob("mnist", "ml").Workers(2).Artifacts("s3://bkt/runs", "/logs").UID("0f3a9c2e-1b4d-4e5f-8a6b-7c8d9e0f1a2b").Obj()
	job.Labels = map[string]string{"team": "vision"}
	job.CreationTimestamp = metav1.NewTime(created)
	job.ResourceVersion, job.Generation = "42", 1
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "tfk8s"}}
	job.Status.State = tfv1.JobRunning

	r := NewRunRecord(job, created.Add(time.Hour))
	if r.Run != "0f3a9c2e" || r.UID != string(job.UID) || r.Name != "mnist" || r.Namespace != "ml" || !r.Submitted.Equal(created) {
		t.Errorf("record = %+v", r)
	}
	if diff := cmp.Diff(job.Spec, r.Job.Spec); diff != "" {
		t.Errorf("spec (-job +record):\n%s", diff)
	}
	if r.Job.Kind != "TFJob" || r.Job.UID != "" || r.Job.ResourceVersion != "" || r.Job.ManagedFields != nil || r.Job.Status.State != "" || r.Job.Labels["team"] != "vision" {
		t.Errorf("record's job carries more than the submitted job: %+v", r.Job.ObjectMeta)
	}
}

// TestWriteEndRecord: a job deleted while it runs ends as Deleted at the time given, with
// its chief's progress record as the lead's, without its series, as the record pod
// writes it.
func TestWriteEndRecord(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	job := testutil.MakeTFJob("mnist", "ml").Chief().Workers(1).Artifacts("s3://"+srv.Bucket+"/runs", "/logs").UID("0f3a9c2e-1b4d-4e5f-8a6b-7c8d9e0f1a2b").Obj()
	job.Status.State = tfv1.JobRunning
	p := &tfevents.Progress{Step: 30, Scalars: map[string]tfevents.Last{"loss": {Step: 30, Value: 0.5}},
		Series: map[string][]tfevents.Point{"loss": {{Step: 30, Value: 0.5}}}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutObject(t.Context(), ArtifactsBase(job).Join("chief-0/", storage.ProgressName), bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteEndRecord(t.Context(), c, job, now); err != nil {
		t.Fatal(err)
	}
	var got tfjob.RunEnd
	if found, err := c.GetJSON(t.Context(), ArtifactsBase(job).Join(storage.RunEndName), &got); !found || err != nil {
		t.Fatalf("end.json: found %v, %v", found, err)
	}
	want := &tfjob.LeadProgress{Replica: "chief-0", Progress: tfevents.Progress{Step: 30, Scalars: p.Scalars}}
	if got.State != tfjob.RunDeleted || !got.Completed.Equal(now) || !cmp.Equal(want, got.Lead) {
		t.Errorf("end.json: state %s at %v, lead %+v; want Deleted at %v, lead %+v", got.State, got.Completed, got.Lead, now, want)
	}
}
