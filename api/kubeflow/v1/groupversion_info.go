// Package kubeflowv1 holds Kubeflow's kubeflow.org/v1 TFJob as tfk8s serves it: the
// schema training-operator v1.9 publishes, so that Kubeflow's manifests, its Python SDK
// and Kueue's kubeflow.org/tfjob integration work unchanged against tfk8s.
//
// The controller converts a kubeflow.org TFJob into tfk8s's own tfk8s.io/v1alpha1 model
// (internal/controller/kubeflow) and reconciles that. The defaults v1.9 applies in its
// controller rather than in its CRD (replicas 1, restartPolicy Never, cleanPodPolicy
// None, the port tfjob-port 2222, replica types spelled in any case) are applied by that
// conversion, so the stored object keeps the user's spelling, as it does under v1.9.
//
// +kubebuilder:object:generate=true
// +groupName=kubeflow.org
// +versionName=v1
package kubeflowv1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is kubeflow.org/v1.
	GroupVersion = schema.GroupVersion{Group: "kubeflow.org", Version: "v1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TFJob{}, &TFJobList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
