package build

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestConstructPodPacksGPUReplicas checks that every pod asking for GPUs prefers the
// nodes of its own job's pods, that a pod without GPUs (a parameter server) gets no
// affinity, and that a template's own affinity is kept as it is.
func TestConstructPodPacksGPUReplicas(t *testing.T) {
	pack := &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tfv1.LabelJobName: "j"}},
				TopologyKey:   "kubernetes.io/hostname",
			},
		}},
	}}
	own := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
		}}},
	}}
	cases := []struct {
		name     string
		rt       tfv1.ReplicaType
		gpus     string
		template *corev1.Affinity
		want     *corev1.Affinity
	}{
		{name: "worker with GPUs", rt: tfv1.ReplicaTypeWorker, gpus: "2", want: pack},
		{name: "chief with GPUs", rt: tfv1.ReplicaTypeChief, gpus: "1", want: pack},
		{name: "worker without GPUs", rt: tfv1.ReplicaTypeWorker},
		{name: "parameter server", rt: tfv1.ReplicaTypePS},
		{name: "template's own affinity", rt: tfv1.ReplicaTypeWorker, gpus: "2", template: own, want: own},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Chief().PS(1).Workers(2).Obj()
			spec := &job.Spec.TFReplicaSpecs[tc.rt].Template.Spec
			if tc.gpus != "" {
				spec.Containers[0].Resources.Limits = corev1.ResourceList{tfjob.GPUResource: resource.MustParse(tc.gpus)}
			}
			spec.Affinity = tc.template
			pod := buildPod(t, job, tc.rt, 0, PodOptions{})
			if diff := cmp.Diff(tc.want, pod.Spec.Affinity); diff != "" {
				t.Errorf("affinity (-want +got):\n%s", diff)
			}
		})
	}
}
