package localnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupMount is where the host mounts its cgroup hierarchies: each directory in it
// with a cgroup.procs file is one (cgroup v1's controllers, the named systemd
// hierarchy, and the unified one of a hybrid host).
const cgroupMount = "/sys/fs/cgroup"

// systemCgroup is where, under the node's cgroup root, the node's own processes run:
// its init, containerd, the shims, the kubelet and kube-proxy. The kubelet puts the
// pods beside it, under kubepods.
const systemCgroup = "system"

// cgroupHierarchies lists the host's cgroup hierarchies under root.
func cgroupHierarchies(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("listing cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			continue // cpu,cpuacct links to cpuacct,cpu
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			out = append(out, dir)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err == nil {
		out = append(out, root) // a cgroup v2 host
	}
	return out, nil
}

// createCgroups creates cgroup (an absolute cgroup path) in every hierarchy, giving
// each new cpuset its parent's CPUs and memory nodes, which a v1 cpuset needs before
// it can hold a process.
func createCgroups(hierarchies []string, cgroup string) error {
	for _, h := range hierarchies {
		if err := createCgroupIn(h, cgroup); err != nil {
			return err
		}
	}
	return nil
}

// createCgroupAttempts bounds createCgroupIn's rounds: another node that stops may
// remove the parent the nodes share between this one's two mkdirs.
const createCgroupAttempts = 10

// parentRemoved reports the errors of a level removed under the caller: gone from
// its parent (ENOENT), or removed while its files were written (ENODEV).
func parentRemoved(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

// createCgroupIn creates cgroup in the hierarchy h, each missing level in turn.
func createCgroupIn(h, cgroup string) error {
	var err error
	for range createCgroupAttempts {
		dir := h
		err = nil
		for _, part := range strings.Split(strings.Trim(cgroup, "/"), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err = os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				break
			}
			if err = inheritCpuset(parent, dir); err != nil {
				break
			}
		}
		if err == nil || !parentRemoved(err) {
			break // done, or failed for another reason than a parent just removed
		}
	}
	if err != nil {
		return fmt.Errorf("creating cgroup %s in %s: %w", cgroup, h, err)
	}
	return nil
}

// inheritCpuset copies a v1 cpuset's CPUs and memory nodes from parent to dir where
// dir has none yet; elsewhere it does nothing.
func inheritCpuset(parent, dir string) error {
	for _, name := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || strings.TrimSpace(string(cur)) != "" {
			continue // not a v1 cpuset, or set already
		}
		val, err := os.ReadFile(filepath.Join(parent, name))
		if err != nil {
			return fmt.Errorf("reading %s of %s: %w", name, parent, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), val, 0o644); err != nil {
			return fmt.Errorf("setting %s of %s: %w", name, dir, err)
		}
	}
	return nil
}

// joinCgroups moves process pid into cgroup in every hierarchy.
func joinCgroups(hierarchies []string, cgroup string, pid int) error {
	for _, h := range hierarchies {
		procs := filepath.Join(h, cgroup, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving process %d into %s: %w", pid, procs, err)
		}
	}
	return nil
}

// cgroupProcesses lists the processes in cgroup and below it, in every hierarchy.
func cgroupProcesses(hierarchies []string, cgroup string) []int {
	var pids []int
	for _, h := range hierarchies {
		_ = filepath.WalkDir(filepath.Join(h, cgroup), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// killCgroups SIGKILLs every process in cgroup and below it, except self, until none
// is left or timeout passes; processes forked meanwhile are killed in the next round.
func killCgroups(hierarchies []string, cgroup string, self int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := slices.DeleteFunc(cgroupProcesses(hierarchies, cgroup), func(p int) bool { return p == self })
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of cgroup %s survived SIGKILL for %v", pids, cgroup, timeout)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeCgroups removes cgroup and every cgroup below it, deepest first, in every
// hierarchy; they must hold no process. A cgroup already gone is not an error.
func removeCgroups(hierarchies []string, cgroup string) error {
	var errs []error
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, cgroup), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, dir := range slices.Backward(dirs) {
			if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}
