package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hostCgroupMount is where the host mounts its cgroups: on a cgroup v2 host, the one
// unified hierarchy, whose root holds cgroup.controllers.
const hostCgroupMount = "/sys/fs/cgroup"

// nodeControllers are the cgroup v2 controllers the nodes' kubelets need in the cgroups
// they make below the root: cpu and memory for the pods' requests and limits, pids for
// their process limits.
var nodeControllers = []string{"cpu", "memory", "pids"}

// checkCgroups refuses a cgroup v2 host whose root cgroup does not pass nodeControllers
// down to its children: the nodes' cgroups would have none of them and each kubelet
// would fail to start, far from the cause. A cgroup v1 or hybrid host passes: each
// controller is a hierarchy of its own there.
func checkCgroups(mount string) error {
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(mount, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup v2: reading the controllers %s passes to its children: %w", mount, err)
	}
	enabled := strings.Fields(string(b))
	var missing []string
	for _, c := range nodeControllers {
		if !slices.Contains(enabled, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("cgroup v2: %s does not pass %s to its child cgroups (its cgroup.subtree_control holds %q): the nodes' kubelets need %s (as root: echo \"+%s\" > %s/cgroup.subtree_control)",
		mount, strings.Join(missing, ", "), strings.Join(enabled, " "), strings.Join(nodeControllers, ", "),
		strings.Join(missing, " +"), mount)
}
