package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/node"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// TestContainersCannotReadHostSecrets: a container's root is the host's, yet it reads
// none of the host's secrets: password hashes, sudo rules, root's home, the node's
// state and the paths the node is told to mask (a local cluster's kubeconfig and keys).
// Each read is attempted as root in the container; each must fail.
func TestContainersCannotReadHostSecrets(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	secret := filepath.Join(maskedDir, "kubeconfig")
	if err := writeFile(secret, "admin-token"); err != nil {
		t.Fatal(err)
	}
	targets := []string{"/etc/shadow", "/etc/gshadow", secret, filepath.Join(stateDir, "ipam")}
	// Only what exists on this host proves anything.
	for _, p := range []string{"/root/.bashrc", "/etc/sudoers", "/etc/ssh/ssh_host_ed25519_key"} {
		if _, err := os.Stat(p); err == nil {
			targets = append(targets, p)
		}
	}
	var script strings.Builder
	for _, p := range targets {
		// A masked file reads as empty (/dev/null), a masked directory lists nothing.
		fmt.Fprintf(&script, "got=$( { if [ -d %[1]s ]; then ls -A %[1]s; else cat %[1]s; fi; } 2>/dev/null)\n", p)
		fmt.Fprintf(&script, "if [ -n \"$got\" ]; then echo 'read %[1]s'; else echo 'hidden %[1]s'; fi\n", p)
	}
	createPod(t, shPod("snoop", ns, script.String()))
	waitPhase(t, ns, "snoop", corev1.PodSucceeded)
	var want []string
	for _, p := range targets {
		want = append(want, "hidden "+p)
	}
	if diff := cmp.Diff(want, logLines(podLogs(t, ns, "snoop", &corev1.PodLogOptions{}))); diff != "" {
		t.Errorf("what the container read of the host's secrets (-want +got):\n%s", diff)
	}
}

// TestHostPathOutsideAllowedPathsRefused: a pod whose hostPath volume names a
// directory outside --allowed-host-paths fails at once, with a reason and message
// that name the volume, the path and the flag, and a Warning event saying the same.
func TestHostPathOutsideAllowedPathsRefused(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("etc", ns, "cat /host/shadow")
	pod.Spec.Volumes = []corev1.Volume{{Name: "hostetc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "hostetc", MountPath: "/host"}}
	createPod(t, pod)
	p := waitPhase(t, ns, "etc", corev1.PodFailed)
	if p.Status.Reason != node.ReasonHostPathNotAllowed {
		t.Errorf("reason %q, want %q", p.Status.Reason, node.ReasonHostPathNotAllowed)
	}
	for _, want := range []string{"volume hostetc", "hostPath /etc", "--allowed-host-paths", os.TempDir()} {
		if !strings.Contains(p.Status.Message, want) {
			t.Errorf("message %q lacks %q", p.Status.Message, want)
		}
	}
	if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Running != nil {
		t.Errorf("the container ran: %+v", cs[0].State)
	}
	waitEvent(t, ns, "etc", node.ReasonHostPathNotAllowed, "")
}
