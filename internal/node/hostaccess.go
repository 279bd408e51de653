package node

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonHostPathNotAllowed fails a pod whose hostPath volume (or whose claim's
// hostPath or local volume) lies outside the node's allowed host paths.
const ReasonHostPathNotAllowed = "HostPathNotAllowed"

// credentialPaths are the host's secrets that no container may read, though its root
// is the host's own: password hashes, sudo rules, SSH host keys, root's home (and with
// it root's kubeconfig and ~/.tfk8s), and the kubeconfigs and tfk8s settings of the
// user running the node. Missing paths are skipped by runc.
var credentialPaths = []string{
	"/root",
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d",
	"/etc/ssh",
	"/etc/kubernetes",
	"/var/lib/kubelet",
}

// hiddenPaths are the host paths masked in every unprivileged container: the
// credential paths, each home directory's .tfk8s and .kube, the node's state directory
// and extra (a local cluster's state directory). A path that holds the destination of
// one of mounts is left visible, so that a mount into it (the tfk8s binaries, under
// /root in a developer's tree) is not hidden with it.
func hiddenPaths(home, stateDir string, extra []string, mounts []string) []string {
	paths := slices.Clone(credentialPaths)
	homes, _ := filepath.Glob("/home/*")
	if home != "" {
		homes = append(homes, home)
	}
	for _, h := range homes {
		paths = append(paths, filepath.Join(h, ".tfk8s"), filepath.Join(h, ".kube"))
	}
	paths = append(paths, stateDir)
	paths = append(paths, extra...)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	return slices.DeleteFunc(paths, func(p string) bool {
		return slices.ContainsFunc(mounts, func(m string) bool { return within(m, p) })
	})
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// hostPathAllowed reports whether path lies under one of the allowed prefixes; the
// path is cleaned first, so "/data/../etc" is /etc.
func hostPathAllowed(path string, allowed []string) bool {
	return slices.ContainsFunc(allowed, func(prefix string) bool { return within(path, prefix) })
}

// checkHostPaths refuses a pod with a hostPath volume outside the allowed prefixes,
// naming the volume, its path and the flag that allows it.
func checkHostPaths(pod *corev1.Pod, allowed []string) error {
	for _, v := range pod.Spec.Volumes {
		if v.HostPath == nil || hostPathAllowed(v.HostPath.Path, allowed) {
			continue
		}
		return errHostPath(v.Name, v.HostPath.Path, allowed)
	}
	return nil
}

// errHostPath says that volume's host path is outside the allowed prefixes.
func errHostPath(volume, path string, allowed []string) error {
	list := "none"
	if len(allowed) > 0 {
		list = strings.Join(allowed, ", ")
	}
	return fmt.Errorf("volume %s: hostPath %s is outside the node's allowed host paths (%s; tfk8s-node --allowed-host-paths)", volume, path, list)
}

// userHome is the home directory of the user running the node, or "".
func userHome() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home
}
