package localnode

import (
	"fmt"
	"os"
	"path/filepath"
)

// cadvisorContainerdSocket is where the kubelet's cAdvisor looks for containerd: its
// own default, which the kubelet has no flag to change.
const cadvisorContainerdSocket = "/run/containerd/containerd.sock"

// linkContainerdSocket points cAdvisor's default socket, link (cadvisorContainerdSocket
// on the node's own /run), at containerd's socket in the state directory. A link left
// by an earlier start is replaced. Without it cAdvisor sees the pods'
// cgroups only as raw cgroups, and /metrics/cadvisor labels no series with its pod,
// namespace and container, which Prometheus's per-replica queries select by.
func linkContainerdSocket(socket, link string) error {
	if err := os.MkdirAll(filepath.Dir(link), 0o711); err != nil {
		return fmt.Errorf("linking containerd's socket for cAdvisor: %w", err)
	}
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("linking containerd's socket for cAdvisor: %w", err)
	}
	if err := os.Symlink(socket, link); err != nil {
		return fmt.Errorf("linking containerd's socket for cAdvisor: %w", err)
	}
	return nil
}
