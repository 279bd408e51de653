package localnode

import (
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
