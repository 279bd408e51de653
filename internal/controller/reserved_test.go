package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestWithoutReserved checks which template keys the controller leaves out of pods:
// those of its own domains and their subdomains, in any case, and nothing else.
func TestWithoutReserved(t *testing.T) {
	cases := []struct {
		name        string
		in          map[string]string
		wantKept    map[string]string
		wantDropped []string
	}{
		{name: "none", in: nil},
		{
			name:     "plain keys are kept",
			in:       map[string]string{"app": "mnist", "example.com/team": "a", "kueue.x-k8s.io/queue-name": "q"},
			wantKept: map[string]string{"app": "mnist", "example.com/team": "a", "kueue.x-k8s.io/queue-name": "q"},
		},
		{
			name: "a notebook's and a TensorBoard's selector labels",
			in: map[string]string{"app": "x", tfv1.LabelNotebook: "nb-b", tfv1.LabelTensorBoard: "vjob",
				tfv1.AnnotationFailuresInARow: "0"},
			wantKept:    map[string]string{"app": "x"},
			wantDropped: []string{tfv1.AnnotationFailuresInARow, tfv1.LabelNotebook, tfv1.LabelTensorBoard},
		},
		{
			name: "Kubeflow's domain, subdomains and case",
			in: map[string]string{"training.kubeflow.org/job-name": "v", "x.tfk8s.io/a": "1", "TFK8S.IO/b": "2",
				"nottfk8s.io/c": "3", "tfk8s.io.example.com/d": "4"},
			wantKept:    map[string]string{"nottfk8s.io/c": "3", "tfk8s.io.example.com/d": "4"},
			wantDropped: []string{"TFK8S.IO/b", "training.kubeflow.org/job-name", "x.tfk8s.io/a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kept, dropped := withoutReserved(tc.in)
			if diff := cmp.Diff(tc.wantKept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConstructPodDropsReservedLabels checks that a template cannot put a job's pod
// behind a notebook's Service or a TensorBoard's, nor set the controller's own
// labels, and that the job's FieldsIgnored condition names each key left out.
func TestConstructPodDropsReservedLabels(t *testing.T) {
	job := testutil.MakeTFJob("mnist", "ml").UID("uid-1").Workers(1).Obj()
	tmpl := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template
	tmpl.Labels = map[string]string{"app": "mnist", tfv1.LabelNotebook: "nb-b", tfv1.LabelJobName: "other"}
	tmpl.Annotations = map[string]string{tfv1.AnnotationFailuresInARow: "0"}

	pod := buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{})
	wantLabels := map[string]string{"app": "mnist", tfv1.LabelJobName: "mnist", tfv1.LabelReplicaType: "worker", tfv1.LabelReplicaIndex: "0"}
	if diff := cmp.Diff(wantLabels, pod.Labels); diff != "" {
		t.Errorf("pod labels (-want +got):\n%s", diff)
	}
	if len(pod.Annotations) != 0 {
		t.Errorf("pod annotations %v, want none", pod.Annotations)
	}

	st := &tfv1.TFJobStatus{}
	noteIgnoredFields(job, "", st, metav1.Now())
	c := findCondition(st, tfv1.JobFieldsIgnored)
	if c == nil {
		t.Fatal("no FieldsIgnored condition; want one naming the reserved keys")
	}
	for _, want := range []string{
		"spec.tfReplicaSpecs.Worker.template.metadata.labels[tfk8s.io/notebook]",
		"spec.tfReplicaSpecs.Worker.template.metadata.labels[tfk8s.io/job-name]",
		"spec.tfReplicaSpecs.Worker.template.metadata.annotations[tfk8s.io/failures-in-a-row]",
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q does not name %s", c.Message, want)
		}
	}
}
