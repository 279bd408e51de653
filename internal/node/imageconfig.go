package node

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	securejoin "github.com/cyphar/filepath-securejoin"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
)

// containerProcess is the process line of a container, Kubernetes' rules applied to
// its image's configuration: a command replaces the entrypoint and drops the cmd; args
// alone replace the cmd; neither runs entrypoint and cmd. $(VAR) references of the
// container's command and args are expanded; the image's are left as written.
func containerProcess(c *corev1.Container, img v1.Config, lookup func(string) (string, bool)) []string {
	var args []string
	expanded := func(list []string) {
		for _, a := range list {
			args = append(args, expand(a, lookup))
		}
	}
	switch {
	case len(c.Command) > 0:
		expanded(c.Command)
		expanded(c.Args)
	case len(c.Args) > 0:
		args = slices.Clone(img.Entrypoint)
		expanded(c.Args)
	default:
		args = append(slices.Clone(img.Entrypoint), img.Cmd...)
	}
	return args
}

// imageEnv is the image's environment as the first variables of a container, a
// default PATH when the image sets none.
func imageEnv(img v1.Config) []corev1.EnvVar {
	var env []corev1.EnvVar
	hasPath := false
	for _, kv := range img.Env {
		k, v, _ := strings.Cut(kv, "=")
		hasPath = hasPath || k == "PATH"
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	if !hasPath {
		env = append([]corev1.EnvVar{{Name: "PATH", Value: defaultPath}}, env...)
	}
	return env
}

// identity is the user a container's process runs as.
type identity struct {
	UID, GID uint32
	// Groups are the supplementary groups the image's /etc/group gives the user.
	Groups []uint32
	// Name is the image's user when it names one rather than a number: the kubelet
	// cannot tell whether it is root.
	Name string
}

// resolveUser resolves an image's USER ("uid", "uid:gid", "name", "name:group", ...)
// in the image's /etc/passwd and /etc/group under root, as container runtimes do: a
// numeric uid not in passwd gets gid 0; a name not in passwd is an error.
func resolveUser(root, user string) (identity, error) {
	if user == "" {
		return identity{}, nil
	}
	u, g, hasGroup := strings.Cut(user, ":")
	passwd := readColonFile(root, "/etc/passwd")
	var id identity
	if n, err := strconv.ParseUint(u, 10, 32); err == nil {
		id.UID = uint32(n)
		if e, ok := findEntry(passwd, func(e []string) bool { return e[2] == u }); ok {
			id.GID = parseID(e[3])
			id.Groups = userGroups(root, e[0], id.GID)
		}
	} else {
		e, ok := findEntry(passwd, func(e []string) bool { return e[0] == u })
		if !ok {
			return identity{}, fmt.Errorf("user %q of the image not found in its /etc/passwd", u)
		}
		id.UID, id.GID, id.Name = parseID(e[2]), parseID(e[3]), u
		id.Groups = userGroups(root, u, id.GID)
	}
	if hasGroup {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			id.GID = uint32(n)
		} else {
			e, ok := findEntry(readColonFile(root, "/etc/group"), func(e []string) bool { return e[0] == g })
			if !ok {
				return identity{}, fmt.Errorf("group %q of the image not found in its /etc/group", g)
			}
			id.GID = parseID(e[2])
		}
	}
	return id, nil
}

// userGroups are the groups of /etc/group that list user as a member, but gid.
func userGroups(root, user string, gid uint32) []uint32 {
	var groups []uint32
	for _, e := range readColonFile(root, "/etc/group") {
		if len(e) < 4 || parseID(e[2]) == gid {
			continue
		}
		if slices.Contains(strings.Split(e[3], ","), user) {
			groups = append(groups, parseID(e[2]))
		}
	}
	return groups
}

// readColonFile reads the entries of a passwd or group file of the image under root,
// resolving symlinks inside it; a missing file has none.
func readColonFile(root, file string) [][]string {
	p, err := securejoin.SecureJoin(root, file)
	if err != nil {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var entries [][]string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if fields := strings.Split(line, ":"); len(fields) >= 4 {
			entries = append(entries, fields)
		}
	}
	return entries
}

func findEntry(entries [][]string, match func([]string) bool) ([]string, bool) {
	for _, e := range entries {
		if match(e) {
			return e, true
		}
	}
	return nil, false
}

func parseID(s string) uint32 {
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}

// checkRunAsNonRoot refuses to run as root a container that must not, in the
// kubelet's words. runAsUser, when set, is what runs; else the image's user, which
// must be numeric for the kubelet to verify it.
func checkRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, runAsUser *int64, img identity, podRef string) error {
	var nonRoot *bool
	if pod.Spec.SecurityContext != nil {
		nonRoot = pod.Spec.SecurityContext.RunAsNonRoot
	}
	if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
		nonRoot = c.SecurityContext.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		return nil
	}
	switch {
	case runAsUser != nil && *runAsUser == 0:
		return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podRef, c.Name)
	case runAsUser != nil:
		return nil
	case img.Name != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", img.Name, podRef, c.Name)
	case img.UID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podRef, c.Name)
	}
	return nil
}
