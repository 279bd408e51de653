package kubeflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestToTFK8s: a live Kubeflow job moves to a tfk8s.io manifest that a new object can
// be created from, keeping v1.9's defaults and dropping training-operator's managedBy.
func TestToTFK8s(t *testing.T) {
	kf := &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "team", UID: "u", ResourceVersion: "7", Generation: 2,
			Labels:      map[string]string{"team": "vision"},
			Annotations: map[string]string{lastApplied: "{}", "note": "kept"}},
		Spec: kubeflowv1.TFJobSpec{
			RunPolicy: kubeflowv1.RunPolicy{ManagedBy: ptr.To(kubeflowv1.ManagedByTrainingOperator)},
			TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"worker": {Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow", Image: "tf"}}},
			}}},
		},
		Status: kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{{Type: "Running", Status: corev1.ConditionTrue}}},
	}
	got := ToTFK8s(ToModel(kf))
	want := &tfv1.TFJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "team", Labels: map[string]string{"team": "vision"}, Annotations: map[string]string{"note": "kept"}},
		Spec: tfv1.TFJobSpec{
			TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{tfv1.ReplicaTypeWorker: {
				Replicas: ptr.To[int32](1), RestartPolicy: tfv1.RestartPolicyNever,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow", Image: "tf",
					Ports: []corev1.ContainerPort{{Name: "tfjob-port", ContainerPort: 2222}}}}}},
			}},
			RunPolicy:     tfv1.RunPolicy{CleanPodPolicy: ptr.To(tfv1.CleanPodPolicyNone)},
			SuccessPolicy: ptr.To(tfv1.SuccessPolicy("")),
			StartupPolicy: tfv1.StartupPolicyParallel,
			Networking:    tfv1.Networking{Mode: tfv1.NetworkingModeDNS},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ToTFK8s (-want +got):\n%s", diff)
	}
}
