package localcluster

import (
	"path/filepath"
	"testing"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// TestKubeflowCRDDir finds the kubeflow.org CRD that up installs in the source tree
// around BinDir, and only it: config/crd/bases keeps tfk8s.io's alone.
func TestKubeflowCRDDir(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := controlplane.ReadCRDs(kubeflowCRDDir(Options{BinDir: filepath.Join(root, "bin")}))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 || crds[0].Name != KubeflowCRD {
		t.Fatalf("%d CRDs, the first %s; want %s alone", len(crds), crds[0].Name, KubeflowCRD)
	}
	bases, err := controlplane.ReadCRDs(filepath.Join(root, "config", "crd", "bases"))
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range bases {
		if crd.Name == KubeflowCRD {
			t.Errorf("%s in config/crd/bases: every install would serve it", KubeflowCRD)
		}
	}
}
