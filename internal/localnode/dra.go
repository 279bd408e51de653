package localnode

import (
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
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--drivername=" + DRADriver,
		"kubelet-plugin",
		"--node-name=" + c.Name,
		"--num-devices=" + strconv.Itoa(c.DRAGPUs),
		"--cdi-dir=" + pathsOf(c).cdiDir,
		"--plugin-registration-path=" + filepath.Join(kubeletRootDir, "plugins_registry"),
		"--datadir=" + filepath.Join(kubeletRootDir, "plugins"),
	}
}
