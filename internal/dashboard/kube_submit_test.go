package dashboard

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	job, err := FormJob(SubmitRequest{Namespace: "a", Flags: cloneFlags(old), Command: cloneCommand(old)})
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

// TestCloneFlagsOnlyWhatTheFormSays: a job with what the form's flags cannot carry
// (artifacts, volumes, ...) has no form fields, only its YAML.
func TestCloneFlagsOnlyWhatTheFormSays(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "a").Workers(1).Obj()
	if cloneFlags(job) == nil {
		t.Fatal("a plain job has no form fields")
	}
	job.Spec.Volumes = []tfv1.JobVolume{{Name: "logs", MountPath: "/logs"}}
	if f := cloneFlags(job); f != nil {
		t.Errorf("a job with volumes has form fields %v, which would drop them", f)
	}
}
