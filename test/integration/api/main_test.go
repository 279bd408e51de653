// Package api tests the TFJob API as the real kube-apiserver serves it: the CRD, its
// defaults and its validation rules.
package api

import (
	"context"
	"fmt"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
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

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(tfv1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	if k8sClient, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, "creating client:", err)
		return 1
	}
	return m.Run()
}
