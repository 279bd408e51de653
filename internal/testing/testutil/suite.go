package testutil

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/scheme"
)

// Suite is the fixture every integration test package shares: a real control plane
// for the package, an administrator's client of tfk8s's types and the CRD's, and a log
// file for the controllers its tests run, kept and named only when a test fails.
type Suite struct {
	ControlPlane *controlplane.ControlPlane
	Client       client.Client
	Log          *os.File
}

// RunSuite starts the fixture with opts, calls setup for what else the package needs
// (teardown, if it returns one, runs after the tests and may fail them), runs the
// tests and stops everything. It returns the exit code for os.Exit.
func RunSuite(m *testing.M, opts controlplane.Options, setup func(*Suite) (teardown func() error, err error)) int {
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	var err error
	s := &Suite{}
	if s.Log, err = os.CreateTemp("", "tfk8s-integration-*.log"); err != nil {
		return fail("creating the controllers' log", err)
	}
	defer s.Log.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(s.Log), zap.Level(zapcore.Level(-4))))
	if s.ControlPlane, err = controlplane.Start(context.Background(), opts); err != nil {
		return fail("starting the control plane", err)
	}
	defer s.ControlPlane.Stop()
	v := s.ControlPlane.Version
	fmt.Printf("control plane: kube-apiserver %s (%s)\n", v.GitVersion, v.Platform)
	sch := scheme.New()
	utilruntime.Must(apiextensionsv1.AddToScheme(sch))
	if s.Client, err = client.New(s.ControlPlane.Config, client.Options{Scheme: sch}); err != nil {
		return fail("creating the client", err)
	}
	var teardown func() error
	if setup != nil {
		if teardown, err = setup(s); err != nil {
			return fail("setting up the suite", err)
		}
	}
	code := m.Run()
	if teardown != nil {
		if err := teardown(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code != 0 {
		fmt.Printf("controller logs: %s\n", s.Log.Name())
	} else {
		os.Remove(s.Log.Name())
	}
	return code
}
