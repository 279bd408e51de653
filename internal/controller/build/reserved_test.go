package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
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
			kept, dropped := WithoutReserved(tc.in)
			if diff := cmp.Diff(tc.wantKept, kept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDropped, dropped); diff != "" {
				t.Errorf("dropped (-want +got):\n%s", diff)
			}
		})
	}
}
