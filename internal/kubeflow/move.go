package kubeflow

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// lastApplied is kubectl's record of the manifest it applied: that of the Kubeflow job,
// which kubectl apply of the moved job must not take for its own.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// ToTFK8s is the tfk8s.io TFJob a Kubeflow TFJob's model (ToModel) moves to: under
// tfk8s.io/v1alpha1, with what a new object may carry of its metadata (name,
// namespace, labels, annotations) and no status. The model writes v1.9's defaults out
// (cleanPodPolicy None, restartPolicy Never), so the moved job behaves as the Kubeflow
// one did where tfk8s.io's defaults differ. training-operator's runPolicy.managedBy is
// dropped: a tfk8s.io job under it would be left to a controller that is not there.
func ToTFK8s(model *tfv1.TFJob) *tfv1.TFJob {
	out := &tfv1.TFJob{
		TypeMeta: metav1.TypeMeta{APIVersion: tfv1.GroupVersion.String(), Kind: "TFJob"},
		ObjectMeta: metav1.ObjectMeta{
			Name: model.Name, Namespace: model.Namespace,
			Labels: maps.Clone(model.Labels), Annotations: maps.Clone(model.Annotations),
		},
		Spec: *model.Spec.DeepCopy(),
	}
	delete(out.Annotations, lastApplied)
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	if m := out.Spec.RunPolicy.ManagedBy; m != nil && *m == kubeflowv1.ManagedByTrainingOperator {
		out.Spec.RunPolicy.ManagedBy = nil
	}
	return out
}
