// Package install tests how tfk8s is installed on a cluster: the Helm chart and the
// kustomize manifests, rendered by Helm's and kustomize's own Go packages, applied to a
// real API server, and the controller run with nothing but the chart's RBAC; and the
// images make images builds.
package install

import (
	"context"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	tfk8sscheme "github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
	logs      testutil.SyncBuffer
)

// Where the install lives and who the controller is, as the chart and config/default
// name them.
const (
	systemNamespace = "tfk8s-system"
	serviceAccount  = "tfk8s-controller"
	repoRoot        = "../../.."
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	cp, err = controlplane.Start(context.Background(), controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting control plane:", err)
		return 1
	}
	defer cp.Stop()
	fmt.Printf("control plane: kube-apiserver %s (%s)\n", cp.Version.GitVersion, cp.Version.Platform)
	if k8sClient, err = client.New(cp.Config, client.Options{Scheme: scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, "creating client:", err)
		return 1
	}
	return m.Run()
}

// scheme is the controller's, with CRDs.
func scheme() *runtime.Scheme {
	s := tfk8sscheme.New()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}
