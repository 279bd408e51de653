package cli

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// replica is a replica spec with one container, as submit builds it.
func replica(n int32, c corev1.Container) *tfv1.ReplicaSpec {
	spec := &tfv1.ReplicaSpec{Replicas: ptr.To(n)}
	spec.Template.Spec.Containers = []corev1.Container{c}
	return spec
}

// tfJob is a job of the given replicas, with its apiVersion and kind.
func tfJob(name, ns string, specs map[tfv1.ReplicaType]*tfv1.ReplicaSpec) *tfv1.TFJob {
	job := jobspec.NewTFJob()
	job.Name, job.Namespace, job.Spec.TFReplicaSpecs = name, ns, specs
	return job
}
