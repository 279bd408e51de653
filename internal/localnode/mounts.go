package localnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// kubeletRootDir is the kubelet's root directory as the node sees it: the kubelet
// puts its device-plugin socket there whatever its --root-dir, so the node's own
// directory is mounted on it.
const kubeletRootDir = "/var/lib/kubelet"

// privateDirs are the host directories the node's programs write to at fixed paths:
// each gets a tmpfs of its own in the node's mount namespace, so the host's stay
// untouched and the node's go with the namespace.
var privateDirs = []string{"/run", "/var/lib", "/var/log"}

// stagingDir holds, on the node's private /run, a bind mount of the state directory,
// from which a state directory under /var/lib or /var/log is mounted back in place
// once the tmpfs cover it.
const stagingDir = "/run/tfk8s-node/state"

// maskedSysctls are the host-wide sysctls the kubelet sets to its liking when it
// starts. Each is covered, in the node's mount namespace only, by a file holding the
// host's value, which the kubelet then rewrites instead.
var maskedSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

// setUpMounts lays out the node's mount namespace; the caller is its only process, in a
// namespace of its own. Every mount becomes private first, so that nothing mounted
// here (by the node, containerd or the kubelet) reaches the host.
func setUpMounts(c Config) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the node's mounts private: %w", err)
	}
	p := pathsOf(c)
	for _, d := range []string{p.kubeletDir, p.logsDir, p.containerdRoot, p.volumes} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := mountTmpfs("/run"); err != nil {
		return err
	}
	if err := bindDir(c.StateDir, stagingDir); err != nil {
		return err
	}
	for _, d := range privateDirs[1:] {
		if err := mountTmpfs(d); err != nil {
			return err
		}
	}
	if underAny(c.StateDir, privateDirs[1:]) {
		if err := bindDir(stagingDir, c.StateDir); err != nil {
			return err
		}
	}
	if err := bindDir(p.kubeletDir, kubeletRootDir); err != nil {
		return err
	}
	return maskSysctls("/run/tfk8s-sysctl")
}

// mountTmpfs mounts a private tmpfs on dir.
func mountTmpfs(dir string) error {
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
		return fmt.Errorf("mounting a private tmpfs on %s: %w", dir, err)
	}
	return nil
}

// underAny reports whether path is one of dirs or lies under one.
func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// bindDir bind-mounts the directory src on dst, creating dst.
func bindDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on %s: %w", src, dst, err)
	}
	return nil
}

// maskSysctls covers each of maskedSysctls with a file in dir holding its current
// value. A sysctl the kernel lacks is left alone.
func maskSysctls(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, name := range maskedSysctls {
		proc := filepath.Join("/proc/sys", name)
		value, err := os.ReadFile(proc)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading sysctl %s: %w", name, err)
		}
		file := filepath.Join(dir, strings.ReplaceAll(name, "/", "."))
		if err := safewrite.File(file, value, 0o644); err != nil {
			return fmt.Errorf("writing the node's copy of sysctl %s: %w", name, err)
		}
		if err := unix.Mount(file, proc, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("masking sysctl %s: %w", name, err)
		}
	}
	return nil
}

// checkOutsideRun refuses a directory the node's private /run would hide from the
// node itself.
func checkOutsideRun(field, dir string) error {
	if underAny(dir, []string{"/run", "/var/run"}) {
		return fmt.Errorf("%s %s lies under /run, which the node covers with a tmpfs of its own: choose another directory", field, dir)
	}
	return nil
}
