package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// suite and packages are what debootstrap installs: Debian's minimal base, Python and
// the CA certificates, and the C++ runtime TensorFlow's libraries link against.
// python-is-python3 adds the command python, which Kubeflow's SDK runs a train_func
// with (python -u), as TensorFlow's own images have it.
const suite = "bookworm"

var packages = []string{"python3", "python-is-python3", "ca-certificates", "libstdc++6"}

// defaultMirror is Debian's mirror when this machine's apt sources name none.
const defaultMirror = "http://deb.debian.org/debian"

// junk is what the root file system drops after debootstrap, relative to the root:
// apt's and dpkg's caches and logs, device nodes (the runtime makes its own), the host's
// name and resolver (the runtime mounts the pod's), documentation and translations.
var junk = []string{
	"var/cache/apt/*", "var/lib/apt/lists/*", "var/log/*", "var/cache/debconf/*-old",
	"var/lib/dpkg/*-old", "dev/*", "tmp/*", "var/tmp/*", "root/.*",
	"usr/share/man/*", "usr/share/info/*", "usr/share/locale/*", "usr/share/doc/*/*",
}

// debootstrap installs debootstrap when absent and builds the root file system in dir,
// downloading .debs through debs (kept between runs).
func debootstrap(dir, debs, mirror string) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		fmt.Println("tensorflow-image: debootstrap not found: installing it with apt-get")
		if err := run("apt-get", "update", "-q"); err != nil {
			return fmt.Errorf("installing debootstrap: %w", err)
		}
		if err := run("apt-get", "install", "-y", "-q", "debootstrap"); err != nil {
			return fmt.Errorf("installing debootstrap: %w", err)
		}
	}
	if err := removeTree(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(debs, 0o755); err != nil {
		return err
	}
	err := run("debootstrap", "--variant=minbase", "--include="+strings.Join(packages, ","),
		"--cache-dir="+debs, suite, dir, mirror)
	if err != nil {
		return fmt.Errorf("running debootstrap %s %s (its log: %s): %w", suite, mirror,
			filepath.Join(dir, "debootstrap/debootstrap.log"), err)
	}
	return nil
}

// cleanRoot drops the junk and recompiles Python's bytecode so that it is checked by
// hash, not by the source's time, which the layer fixes.
func cleanRoot(dir string) error {
	// compileall -j 0 takes its semaphores in /dev/shm, dropped below with /dev.
	if err := os.MkdirAll(filepath.Join(dir, "dev/shm"), 0o1777); err != nil {
		return err
	}
	err := chroot(dir, nil, "python3", "-m", "compileall", "-q", "-f", "-j", "0",
		"--invalidation-mode", "unchecked-hash", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages")
	if err != nil {
		return err
	}
	for _, pattern := range junk {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if strings.HasSuffix(m, "/copyright") {
				continue
			}
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("cleaning the root file system: %w", err)
			}
		}
	}
	// The runtime mounts its own over these; empty, they are the same in every build.
	for _, f := range []string{"etc/hostname", "etc/resolv.conf"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			return fmt.Errorf("cleaning the root file system: %w", err)
		}
	}
	return nil
}

// aptMirror is the Debian mirror this machine's apt uses: the first source that serves
// the suite, in /etc/apt/sources.list and sources.list.d (one-line and deb822 formats).
func aptMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	sort.Strings(files)
	for _, name := range append([]string{"/etc/apt/sources.list"}, files...) {
		if m := mirrorIn(name); m != "" {
			return m
		}
	}
	return defaultMirror
}

// mirrorIn returns the URI of the first Debian source of suite in one sources file.
func mirrorIn(name string) string {
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	var uri string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 3 && fields[0] == "deb" && !strings.HasPrefix(fields[1], "["):
			if fields[2] == suite {
				return fields[1]
			}
		case len(fields) >= 2 && fields[0] == "URIs:":
			uri = fields[1]
		case len(fields) >= 2 && fields[0] == "Suites:":
			for _, s := range fields[1:] {
				if s == suite && uri != "" {
					return uri
				}
			}
		case len(fields) == 0:
			uri = ""
		}
	}
	return ""
}

// removeTree removes dir after unmounting whatever an interrupted debootstrap left
// mounted under it (its /proc and /sys), so that no host file system is touched.
func removeTree(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	data, _ := os.ReadFile("/proc/self/mounts")
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], abs+"/") {
			mounts = append(mounts, f[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			return fmt.Errorf("unmounting %s before removing %s: %w", m, dir, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// chroot runs a command in the root file system dir with a clean environment plus env.
func chroot(dir string, env []string, args ...string) error {
	cmd := exec.Command("chroot", append([]string{dir}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1"}, env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %s in %s: %w", strings.Join(args, " "), dir, err)
	}
	return nil
}

// run runs a command on this machine, its output shown.
func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
