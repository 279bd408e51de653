package bench

import (
	"context"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/trainingoperator"
)

// startOperator runs Kubeflow's training-operator (bin/training-operator, v1.9.4), its
// TFJob controller alone, on the cluster of kubeconfigPath (c its client), watching
// namespace ns alone (so that it leaves the jobs tfk8s ran alone), with args after its
// flags, for the side-by-side benchmark; trainingoperator says how it runs.
func startOperator(b *testing.B, c client.Client, kubeconfigPath, ns string, args ...string) *trainingoperator.Process {
	b.Helper()
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		b.Fatal(err)
	}
	op, err := trainingoperator.Start(context.Background(), c, trainingoperator.Options{
		Binary: filepath.Join(bin, "training-operator"), Kubeconfig: kubeconfigPath, Namespace: ns, Dir: b.TempDir(), Args: args,
	})
	if err != nil {
		b.Fatalf("%v (make tools builds bin/training-operator)", err)
	}
	return op
}
