package build

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// packWeight is the weight of the preferred affinity that packs a job's GPU replicas:
// the highest, so that it outweighs the default scheduler's spreading (it scores the
// least allocated node best) where both apply.
const packWeight = 100

// packGPUReplicas gives a pod that asks for GPUs a preferred affinity to its own job's
// pods on the same node, so that the scheduler packs the job's replicas onto as few
// nodes as fit: the gradients they exchange stay off the network where they can, and
// whole nodes stay free for the next job that needs them. It is a preference, never a
// requirement: a job larger than a node still spreads. A template that sets its own
// affinity knows better and is left as it is; a pod without GPUs (the parameter servers)
// gets none.
func packGPUReplicas(job *tfv1.TFJob, spec *corev1.PodSpec) {
	if spec.Affinity != nil || tfjob.PodGPUs(spec) == 0 {
		return
	}
	spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: packWeight,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{tfv1.LabelJobName: job.Name}},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}
