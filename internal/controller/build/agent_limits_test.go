package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tensorboard"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
)

// emptyDirLimits maps each emptyDir of a pod spec to its sizeLimit, "none" when unset.
func emptyDirLimits(spec *corev1.PodSpec) map[string]string {
	out := map[string]string{}
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		out[v.Name] = "none"
		if v.EmptyDir.SizeLimit != nil {
			out[v.Name] = v.EmptyDir.SizeLimit.String()
		}
	}
	return out
}

// TestEmptyDirSizeLimits checks that every emptyDir tfk8s adds is bounded, so that an
// archive unpacking to more than it weighs fills no node's disk: the agent's, each
// code or data directory (the controller's options when set), and the TensorBoards'.
func TestEmptyDirSizeLimits(t *testing.T) {
	job := fixtures.AgentJob()
	job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
	limits := AgentOptions{DirSizeLimit: ptr.To(resource.MustParse("3Gi")), FetchSizeLimit: ptr.To(resource.MustParse("100Gi"))}
	runs := tensorboard.Pod(tensorboard.Spec{Namespace: "ml", Secret: "s3",
		Runs: []tensorboard.Run{{Job: "mnist", Run: "0123abcd", Prefix: "s3://bucket/runs/mnist-0123abcd/"}}})
	cases := []struct {
		name string
		spec *corev1.PodSpec
		want map[string]string
	}{
		{
			name: "agent pod, defaults",
			spec: &buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{}).Spec,
			want: map[string]string{"tfk8s-agent": "2Gi", "tfk8s-fetch-0": "20Gi", "tfk8s-fetch-1": "20Gi"},
		},
		{
			name: "agent pod, the controller's flags",
			spec: &buildPod(t, job, tfv1.ReplicaTypeWorker, 0, PodOptions{Agent: limits}).Spec,
			want: map[string]string{"tfk8s-agent": "3Gi", "tfk8s-fetch-0": "100Gi", "tfk8s-fetch-1": "100Gi"},
		},
		{
			name: "a job's TensorBoard",
			spec: &TensorBoard(job, PodOptions{}).Spec.Template.Spec,
			want: map[string]string{"summaries": "4Gi"},
		},
		{name: "the TensorBoard of runs", spec: &runs.Spec, want: map[string]string{"summaries": "4Gi"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, emptyDirLimits(tc.spec)); diff != "" {
				t.Errorf("emptyDir sizeLimits (-want +got):\n%s", diff)
			}
		})
	}
}
