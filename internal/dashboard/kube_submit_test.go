package dashboard

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestDashboardJob(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     SubmitRequest
		want    map[tfv1.ReplicaType]int32
		wantErr string
	}{
		{name: "form", req: SubmitRequest{Namespace: "a", Command: "python3 train.py", Flags: map[string]string{
			"name": "mnist", "image": "tf", "ps": "2", "workers": "3", "chief": "true", "env": "A=1\n\nB=2\n"}},
			want: map[tfv1.ReplicaType]int32{"Chief": 1, "PS": 2, "Worker": 3}},
		{name: "yaml, the namespace the page's", req: SubmitRequest{Namespace: "a", YAML: "apiVersion: tfk8s.io/v1alpha1\nkind: TFJob\nmetadata: {name: from-yaml, namespace: other}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 4\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n"},
			want: map[tfv1.ReplicaType]int32{"Worker": 4}},
		{name: "a flag of the dashboard's host refused", req: SubmitRequest{Flags: map[string]string{"name": "x", "image": "tf", "filename": "/etc/passwd"}},
			wantErr: `field "filename": not a flag the dashboard submits with`},
		{name: "checked as the flag", req: SubmitRequest{Flags: map[string]string{"name": "x", "image": "tf", "cpu": "-1"}},
			wantErr: `--cpu "-1": must be positive`},
		{name: "bad yaml", req: SubmitRequest{YAML: "kind: [", Flags: map[string]string{}}, wantErr: "reading the YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := FormJob(tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[tfv1.ReplicaType]int32{}
			for rt, spec := range job.Spec.TFReplicaSpecs {
				got[rt] = ptr.Deref(spec.Replicas, 1)
			}
			if d := cmp.Diff(tc.want, got); d != "" || job.Namespace != "a" {
				t.Errorf("replicas (-want +got):\n%s; namespace %q, want a", d, job.Namespace)
			}
		})
	}
}

// TestCloneFlagsRebuildTheJob: the form a clone fills in builds the job again, under
// the new name.
func TestCloneFlagsRebuildTheJob(t *testing.T) {
	old := testutil.MakeTFJob("mnist", "a").PS(1).Workers(3).Chief().Obj()
	for _, spec := range old.Spec.TFReplicaSpecs {
		spec.RestartPolicy = tfv1.RestartPolicyOnFailure
	}
	old.Spec.RunPolicy.BackoffLimit = ptr.To[int32](2)
	old.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](3600)
	old.Spec.RunPolicy.ActiveDeadlineSeconds = ptr.To[int64](7200)
	req := cloneForm(old)
	req.Namespace = "a"
	job, err := FormJob(*req)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(old.Spec.TFReplicaSpecs, job.Spec.TFReplicaSpecs); d != "" {
		t.Errorf("the rebuilt replicas (-old +rebuilt):\n%s", d)
	}
	rp := job.Spec.RunPolicy
	if d := cmp.Diff([]any{int32(2), int32(3600), int64(7200)}, []any{*rp.BackoffLimit, *rp.TTLSecondsAfterFinished, ptr.Deref(rp.ActiveDeadlineSeconds, 0)}); d != "" {
		t.Errorf("the rebuilt run policy (-old +rebuilt):\n%s", d)
	}
}

func TestCloneName(t *testing.T) {
	for in, want := range map[string]string{"mnist": "mnist-2", "mnist-2": "mnist-3", "run-1": "run-1-2", "a-b-9": "a-b-10"} {
		if got := cloneName(in); got != want {
			t.Errorf("cloneName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestArtifactPathsOutsideTheJob: a path that could leave the job's prefix is
// refused before S3 or the cluster is asked.
func TestArtifactPathsOutsideTheJob(t *testing.T) {
	d := &kubeCluster{}
	for _, p := range []string{"", "/etc/passwd", "../other/x", "worker-0/../../x", "worker-0//x", ".."} {
		if err := d.Artifact(context.Background(), "a", "job", p, io.Discard); !errors.Is(err, ErrBadRequest) {
			t.Errorf("path %q: %v, want ErrBadRequest", p, err)
		}
	}
}

// TestCloneFormOnlyWhatTheFormSays: a job with what the form cannot carry (the
// flags it lacks, or parts no flag says) has no form fields, only its YAML, and
// the note names what.
func TestCloneFormOnlyWhatTheFormSays(t *testing.T) {
	tests := []struct {
		name       string
		change     func(*tfv1.TFJob)
		wantFields bool
		wantUnsaid []string
	}{
		{name: "plain", change: func(*tfv1.TFJob) {}, wantFields: true},
		{name: "volumes, which the form has", change: func(j *tfv1.TFJob) {
			j.Spec.Volumes = []tfv1.JobVolume{{Name: "logs", MountPath: "/logs", Size: ptr.To(resource.MustParse("1Gi"))}}
		}, wantFields: true},
		{name: "labels, which the YAML keeps", change: func(j *tfv1.TFJob) {
			j.Labels = map[string]string{"team": "a"}
		}, wantFields: true},
		{name: "artifacts", change: func(j *tfv1.TFJob) {
			j.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://b/runs/", Paths: []string{"/workspace/model"}}
			j.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3"}}
		}, wantUnsaid: []string{"--artifacts", "--artifacts-interval", "spec.artifacts.destination", "spec.storage.secretRef"}},
		{name: "a Kueue queue", change: func(j *tfv1.TFJob) {
			j.Labels = map[string]string{tfv1.LabelKueueQueue: "team-a"}
		}, wantUnsaid: []string{"--queue"}},
		{name: "a node selector", change: func(j *tfv1.TFJob) {
			j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		}, wantUnsaid: []string{"spec.tfReplicaSpecs.Worker.template.spec.nodeSelector"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("mnist", "a").Workers(1).Obj()
			tc.change(job)
			req := cloneForm(job)
			if got := req.Flags != nil; got != tc.wantFields {
				t.Errorf("form fields given: %v, want %v (%v)", got, tc.wantFields, req.Flags)
			}
			if d := cmp.Diff(tc.wantUnsaid, req.Unsaid); d != "" {
				t.Errorf("unsaid (-want +got):\n%s", d)
			}
		})
	}
}
