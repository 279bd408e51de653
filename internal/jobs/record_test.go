package jobs

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
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
