package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRecordManifest checks what submit --from-run makes of a run.json that someone
// with the bucket's keys rewrote: the namespace and name stay where the run was found,
// reserved labels and annotations are left out and named, and a spec that is not the
// job's last known one (or has none to compare with) is unverified.
func TestRecordManifest(t *testing.T) {
	rec := func(edit func(*tfv1.TFJob)) *tfv1.TFJob {
		job := testutil.MakeTFJob("rec", "team").Workers(1).Obj()
		job.Labels = map[string]string{"app": "mnist"}
		if edit != nil {
			edit(job)
		}
		return job
	}
	hostile := rec(func(j *tfv1.TFJob) {
		j.Namespace, j.Name = "kube-system", "other"
		j.Labels[tfv1.LabelNotebook] = "nb-b"
		j.Annotations = map[string]string{"training.kubeflow.org/x": "y", "note": "kept"}
		j.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.HostPID = true
	})
	cases := []struct {
		name           string
		run            runs.Run
		last           *tfv1.TFJob
		wantIgnored    []string
		wantUnverified string
	}{
		{name: "the record as submitted, its job still there", run: runs.Run{Namespace: "team", Name: "rec", Job: rec(nil)}, last: rec(nil)},
		{name: "the live job itself", run: runs.Run{Namespace: "team", Name: "rec", Job: rec(nil), Live: true}},
		{name: "suspended since", run: runs.Run{Namespace: "team", Name: "rec", Job: rec(nil)},
			last: rec(func(j *tfv1.TFJob) { j.Spec.RunPolicy.Suspend = ptr.To(true) })},
		{name: "no job left", run: runs.Run{Namespace: "team", Name: "rec", Job: rec(nil)},
			wantUnverified: "no tfjob team/rec is left to compare run.json's spec with"},
		{
			name: "rewritten to kube-system with hostPID", run: runs.Run{Namespace: "team", Name: "rec", Job: hostile}, last: rec(nil),
			wantIgnored: []string{`namespace "kube-system" (the run is stored under namespace team)`, `name "other" (the run is stored under job rec)`,
				"label tfk8s.io/notebook", "annotation training.kubeflow.org/x"},
			wantUnverified: "run.json's spec differs from tfjob team/rec's in the cluster in spec.tfReplicaSpecs",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := recordManifest(tc.run, tc.last)
			if got.job.Namespace != "team" || got.job.Name != "rec" {
				t.Errorf("job %s/%s, want team/rec: where the run was found", got.job.Namespace, got.job.Name)
			}
			if _, ok := got.job.Labels[tfv1.LabelNotebook]; ok {
				t.Errorf("labels %v keep %s", got.job.Labels, tfv1.LabelNotebook)
			}
			if diff := cmp.Diff(tc.wantIgnored, got.ignored); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			if got.unverified != tc.wantUnverified {
				t.Errorf("unverified %q, want %q", got.unverified, tc.wantUnverified)
			}
			if got.job.Spec.RunPolicy.Suspend != nil {
				t.Error("the job is submitted suspended; want the record's run policy without suspend")
			}
		})
	}
}

// TestRunJob checks the job --from-run --right-size makes of a run that ended: the
// requests its advice names are set, a limit equal to the old request follows, and
// each note says what changed or why nothing did.
func TestRunJob(t *testing.T) {
	record := func() *tfv1.TFJob {
		job := testutil.MakeTFJob("rec", "team").Workers(2).Obj()
		c := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0]
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
		}
		return job
	}
	run := runs.Run{Namespace: "team", Name: "rec", Run: "0000000a", State: string(tfv1.JobSucceeded), Job: record()}
	memory := runs.Advice{ReplicaType: tfv1.ReplicaTypeWorker, Resource: corev1.ResourceMemory, Peak: 1 << 30,
		Requested: resource.MustParse("4Gi"), Suggested: resource.MustParse("1536Mi")}
	gpu := runs.Advice{ReplicaType: tfv1.ReplicaTypeWorker, Resource: tfjob.GPUResource, Peak: 3, MeanUtilizationPercent: 1, Requested: resource.MustParse("1")}
	cases := []struct {
		name        string
		details     *runs.Details
		wantMemory  corev1.ResourceList
		wantResized []string
	}{
		{name: "no --right-size", wantMemory: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")}},
		{
			name: "memory advised", details: &runs.Details{Run: run, Advice: []runs.Advice{memory}},
			wantMemory:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1536Mi")},
			wantResized: []string{"worker memory 4Gi -> 1536Mi"},
		},
		{
			name: "nothing to apply", details: &runs.Details{Run: run, Advice: []runs.Advice{gpu}, NoAdvice: []string{"ps: no usage recorded"}},
			wantMemory: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
			wantResized: []string{"run rec/0000000a: ps: no usage recorded", "not a request to change: " + gpu.String(),
				"run rec/0000000a has no advice to apply: nothing changed"},
		},
	}
	quantities := cmp.Transformer("quantity", func(q resource.Quantity) string { return q.String() })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run
			r.Job = record()
			got := runJob(seenRun{run: r, live: record(), details: tc.details})
			if diff := cmp.Diff(tc.wantResized, got.resized); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			res := got.job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Resources
			if diff := cmp.Diff(tc.wantMemory, res.Requests, quantities); diff != "" {
				t.Errorf("worker requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMemory, res.Limits, quantities); diff != "" {
				t.Errorf("worker limits, which equalled the requests (-want +got):\n%s", diff)
			}
			if got.unverified != "" {
				t.Errorf("unverified %q for a record that is its job's spec", got.unverified)
			}
		})
	}
}
