// Package api tests the TFJob API as the real kube-apiserver serves it: the CRD, its
// defaults and its validation rules.
package api

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testutil.RunSuite(m, controlplane.Options{}, func(s *testutil.Suite) (func() error, error) {
		cp, k8sClient = s.ControlPlane, s.Client
		return nil, nil
	}))
}
