package node

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cgroupParent is the cgroup under which every container of every tfk8s node lives, as
// /tfk8s/<pod uid>/<container>/<runc id>.
const cgroupParent = "tfk8s"

// cgroups places containers in the host's cgroups. runc creates and removes each
// container's own cgroup; with cgroup v1 the node also creates its parent, per pod and
// container, and sets the memory limit there: the parent outlives runc's cgroup, so its
// failure counter tells, after the container died of SIGKILL, whether it hit the limit
// (OOMKilled). With cgroup v2 runc sets the limit and OOM kills are not told apart.
type cgroups struct {
	// mountpoint is where the hierarchies are mounted, /sys/fs/cgroup.
	mountpoint string
	// memoryV1 is the v1 memory hierarchy, or "" without one.
	memoryV1 string
}

// detectCgroups finds the cgroup hierarchies under mountpoint.
func detectCgroups(mountpoint string) cgroups {
	c := cgroups{mountpoint: mountpoint}
	if _, err := os.Stat(filepath.Join(mountpoint, "memory", "memory.limit_in_bytes")); err == nil {
		c.memoryV1 = filepath.Join(mountpoint, "memory")
	}
	return c
}

// containerPath is a container's cgroup for runc, relative to each hierarchy's root;
// the run's ID keeps a restart from colliding with a predecessor runc is still removing.
func (c cgroups) containerPath(podUID, container, runID string) string {
	return "/" + filepath.Join(cgroupParent, podUID, container, runID)
}

// prepare creates a container's parent memory cgroup with its limit (0: none) and
// returns the limit's failure count so far. It reports whether the node holds the
// limit; if not, the OCI spec must carry it.
func (c cgroups) prepare(podUID, container string, memoryLimit int64) (failures uint64, held bool, err error) {
	if c.memoryV1 == "" {
		return 0, false, nil
	}
	dir := filepath.Join(c.memoryV1, cgroupParent, podUID, container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, false, fmt.Errorf("creating memory cgroup: %w", err)
	}
	limit := "-1"
	if memoryLimit > 0 {
		limit = strconv.FormatInt(memoryLimit, 10)
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(limit), 0o644); err != nil {
		return 0, false, fmt.Errorf("setting memory limit: %w", err)
	}
	return c.memoryFailures(podUID, container), true, nil
}

// memoryFailures reads how often the container's memory limit was hit.
func (c cgroups) memoryFailures(podUID, container string) uint64 {
	if c.memoryV1 == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(c.memoryV1, cgroupParent, podUID, container, "memory.failcnt"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// removePod removes a pod's cgroups from every hierarchy. Each must be empty: runc has
// removed the containers' own.
func (c cgroups) removePod(podUID string) error {
	var errs []error
	for _, root := range c.hierarchies() {
		errs = append(errs, removeCgroupTree(filepath.Join(root, cgroupParent, podUID)))
	}
	return joinErrs("removing cgroups", errs)
}

// removeParent removes the shared parent of all pods where no pod is left in it.
func (c cgroups) removeParent() {
	for _, root := range c.hierarchies() {
		_ = os.Remove(filepath.Join(root, cgroupParent))
	}
}

// hierarchies lists the cgroup v1 hierarchies, or the v2 root alone.
func (c cgroups) hierarchies() []string {
	if _, err := os.Stat(filepath.Join(c.mountpoint, "cgroup.controllers")); err == nil {
		return []string{c.mountpoint}
	}
	entries, err := os.ReadDir(c.mountpoint)
	if err != nil {
		return nil
	}
	var roots []string
	for _, e := range entries {
		if e.IsDir() {
			roots = append(roots, filepath.Join(c.mountpoint, e.Name()))
		}
	}
	return roots
}

// removeCgroupTree removes a cgroup and its descendants, deepest first (cgroups are
// removed with rmdir, their files with them).
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Reverse(dirs)
	for _, d := range dirs {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
