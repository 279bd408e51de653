package localnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The node's simulated GPUs for Dynamic Resource Allocation: Kubernetes' own DRA test
// driver (k8s.io/kubernetes/test/e2e/dra/test-driver, built from the module the
// kubelet is built from) runs as the node's kubelet plugin. It publishes DRAGPUs
// devices in a ResourceSlice of the node, and for each claim the kubelet prepares
// writes a CDI spec that sets claim_<claim>_<request>=true in the container's
// environment: containerd reads those specs from the node's cdi directory.
const (
	// DRADriver is the driver name the node's devices are published under, and
	// the name of the DeviceClass that selects them.
	DRADriver = "gpu.tfk8s.io"
	// DRADriverBinary is the driver's program in BinDir.
	DRADriverBinary = "dra-test-driver"
)

// draDriverArgs are the driver's arguments: its kubelet plugin serving the node, with
// the kubelet's identity (the Node authorizer lets a node publish its own
// ResourceSlices and read the claims of its pods), its sockets where the node's
// kubelet looks for plugins, and its CDI specs where containerd reads them.
func draDriverArgs(c Config) []string {
	d := draDriverDirs()
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--drivername=" + DRADriver,
		"kubelet-plugin",
		"--node-name=" + c.Name,
		"--num-devices=" + strconv.Itoa(c.DRAGPUs),
		"--cdi-dir=" + pathsOf(c).cdiDir,
		"--plugin-registration-path=" + d.registration,
		"--datadir=" + d.plugins,
	}
}

// draDirs are where the driver's sockets go: its registration socket where the
// kubelet watches for plugins, its DRA socket in a directory of the driver's name.
type draDirs struct{ registration, plugins, socket string }

// draDriverDirs are the driver's directories in the kubelet's root.
func draDriverDirs() draDirs {
	plugins := filepath.Join(kubeletRootDir, "plugins")
	return draDirs{
		registration: filepath.Join(kubeletRootDir, "plugins_registry"),
		plugins:      plugins,
		socket:       filepath.Join(plugins, DRADriver),
	}
}

// makeDRADriverDirs creates the driver's directories: it creates none of them but
// the plugins directory, and fails to listen in its socket's.
func makeDRADriverDirs() error {
	d := draDriverDirs()
	for _, dir := range []string{d.registration, d.socket} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("creating the DRA driver's %s: %w", dir, err)
		}
	}
	return nil
}

// draCheckpoint is the kubelet's record, in its root directory, of the claims it has
// had the driver prepare.
const draCheckpoint = "dra_manager_state"

// forgetPreparedClaims removes the CDI specs of the claims prepared before the node
// stopped, and the kubelet's record of them: the node kills its pods without the
// driver unpreparing their claims, so the specs would pile up, and a kubelet that
// still counted a claim as prepared would not have its spec written again when it
// starts the claim's pod anew.
func forgetPreparedClaims(p paths) error {
	if err := os.RemoveAll(p.cdiDir); err != nil {
		return fmt.Errorf("emptying %s: %w", p.cdiDir, err)
	}
	checkpoint := filepath.Join(p.kubeletDir, draCheckpoint)
	if err := os.Remove(checkpoint); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", checkpoint, err)
	}
	return nil
}
