// Package build holds the controller's builders: the objects a TFJob owns (its pods
// with the agent and TF_CONFIG, Services, claims, gang group, Kueue Workload,
// TensorBoard and record pod), each a function of the job and options alone. They
// read no cluster and no clock, so that the reconciler decides with them and a test
// compares what they return with cmp.Diff.
package build

import (
	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OwnerRef is the controller reference of everything the job owns, to the object of the
// job's API: its deletion deletes them, and its reconciler is called on their events.
func OwnerRef(job *tfv1.TFJob) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, kubeflow.GVKOf(job))
}

// Adopted is whether tfk8s adopted the job's pods from training-operator.
func Adopted(job *tfv1.TFJob) bool {
	return kubeflow.IsKubeflow(job) && job.Annotations[kubeflowv1.AnnotationAdopted] == "true"
}

// ServicePerReplica reports whether the job asked for training-operator's Services.
// Only a kubeflow.org job may: the Services select on the training.kubeflow.org labels,
// which only its pods carry.
func ServicePerReplica(job *tfv1.TFJob) bool {
	return kubeflow.IsKubeflow(job) && job.Annotations[kubeflowv1.AnnotationTrainingOperatorServices] == "true"
}
