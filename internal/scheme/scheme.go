// Package scheme is the one runtime.Scheme of tfk8s's clients: the Kubernetes types
// client-go knows, and the TFJob.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// New returns a scheme of client-go's types and the TFJob. Each caller gets its own:
// a scheme is written to while types are added.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(tfv1.AddToScheme(s))
	utilruntime.Must(kubeflowv1.AddToScheme(s))
	return s
}
