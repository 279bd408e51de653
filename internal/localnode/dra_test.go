package localnode

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDRADriverArgs(t *testing.T) {
	c := testConfig()
	c.DRAGPUs = 2
	want := []string{
		"--kubeconfig=/var/lib/tfk8s/node/kubelet.kubeconfig",
		"--drivername=gpu.tfk8s.io",
		"kubelet-plugin",
		"--node-name=tfk8s-local",
		"--num-devices=2",
		// Where containerd's cdi_spec_dirs points (TestContainerdConfig).
		"--cdi-dir=/var/lib/tfk8s/node/cdi",
		"--plugin-registration-path=/var/lib/kubelet/plugins_registry",
		"--datadir=/var/lib/kubelet/plugins",
	}
	if diff := cmp.Diff(want, draDriverArgs(c)); diff != "" {
		t.Errorf("the DRA driver's arguments (-want +got):\n%s", diff)
	}
}

// TestWriteConfigsForgetsPreparedClaims: a node started again finds no CDI spec of a
// claim prepared before it stopped, and a kubelet that will ask the driver to prepare
// its pods' claims again.
func TestWriteConfigsForgetsPreparedClaims(t *testing.T) {
	c := testConfig()
	c.StateDir = t.TempDir()
	p := pathsOf(c)
	stale := []string{filepath.Join(p.cdiDir, "gpu.tfk8s.io-claim1.json"), filepath.Join(p.kubeletDir, "dra_manager_state")}
	for _, f := range stale {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // a first start, with none of them, too
		if err := writeConfigs(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range stale {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after writeConfigs: %v, want it gone", f, err)
		}
	}
	if entries, err := os.ReadDir(p.cdiDir); err != nil || len(entries) != 0 {
		t.Errorf("CDI directory: %d entries, %v; want it there and empty", len(entries), err)
	}
}
