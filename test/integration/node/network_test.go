package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// peerScript serves the pod's hostname once on TCP 2222, waits for the test to name its
// peer's IP in /shared/peer-$POD_NAME, then prints what the peer's server says.
const peerScript = `
import os, socket, threading, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 2222))
srv.listen()
def serve():
    conn, _ = srv.accept()
    conn.sendall(socket.gethostname().encode())
    conn.close()
t = threading.Thread(target=serve)
t.start()
open("/shared/listening-" + os.environ["POD_NAME"], "w").close()
peer = "/shared/peer-" + os.environ["POD_NAME"]
while not (os.path.exists(peer) and open(peer).read().strip()):
    time.sleep(0.1)
ip = open(peer).read().strip()
with socket.create_connection((ip, 2222), timeout=10) as s:
    print("peer", ip, "says", s.recv(100).decode(), flush=True)
t.join()
`

// TestPodsListenOnTheSamePortAndReachEachOther: two pods, each in its own network
// namespace with its own IP, both listen on TCP 2222 and talk to each other by pod IP.
func TestPodsListenOnTheSamePortAndReachEachOther(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	shared := t.TempDir()
	for _, name := range []string{"a", "b"} {
		pod := shPod(name, ns, "")
		pod.Spec.Containers[0].Command = []string{"python3", "-c", peerScript}
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAME", Value: name}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
		pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: shared}}}}
		createPod(t, pod)
	}
	a := waitPod(t, ns, "a", 30*time.Second, "listening", func(p *corev1.Pod) bool { return listening(shared, "a") && p.Status.PodIP != "" })
	b := waitPod(t, ns, "b", 30*time.Second, "listening", func(p *corev1.Pod) bool { return listening(shared, "b") && p.Status.PodIP != "" })
	if a.Status.PodIP == b.Status.PodIP || !strings.HasPrefix(a.Status.PodIP, "10.250.0.") || !strings.HasPrefix(b.Status.PodIP, "10.250.0.") {
		t.Fatalf("pod IPs %s and %s, want two distinct addresses from %s", a.Status.PodIP, b.Status.PodIP, testCIDR)
	}
	if err := os.WriteFile(filepath.Join(shared, "peer-a"), []byte(b.Status.PodIP), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "peer-b"), []byte(a.Status.PodIP), 0o644); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ns, "a", corev1.PodSucceeded)
	waitPhase(t, ns, "b", corev1.PodSucceeded)
	if got, want := podLogs(t, ns, "a", &corev1.PodLogOptions{}), fmt.Sprintf("peer %s says b\n", b.Status.PodIP); got != want {
		t.Errorf("a printed %q, want %q", got, want)
	}
	if got, want := podLogs(t, ns, "b", &corev1.PodLogOptions{}), fmt.Sprintf("peer %s says a\n", a.Status.PodIP); got != want {
		t.Errorf("b printed %q, want %q", got, want)
	}
}

func listening(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, "listening-"+name))
	return err == nil
}

// TestHostsAndResolvConf: a pod's /etc/hosts names it at its IP with its FQDN,
// resolv.conf points at the cluster DNS with the cluster's search path, and its
// hostname is its own; a host-network pod keeps the host's name and network.
func TestHostsAndResolvConf(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("dns", ns, "cat /etc/hosts /etc/resolv.conf; echo hostname=$(hostname)")
	pod.Spec.Hostname, pod.Spec.Subdomain = "w0", "job"
	createPod(t, pod)
	hostPod := shPod("hostnet", ns, "echo hostname=$(hostname); cat /proc/net/dev | grep -c "+testBridge)
	hostPod.Spec.HostNetwork = true
	createPod(t, hostPod)

	p := waitPhase(t, ns, "dns", corev1.PodSucceeded)
	lines := logLines(podLogs(t, ns, "dns", &corev1.PodLogOptions{}))
	for _, want := range []string{
		"127.0.0.1\tlocalhost",
		fmt.Sprintf("%s\tw0.job.%s.svc.cluster.local\tw0", p.Status.PodIP, ns),
		fmt.Sprintf("search %s.svc.cluster.local svc.cluster.local cluster.local", ns),
		"nameserver " + clusterDNS,
		"options ndots:5",
		"hostname=w0",
	} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no line %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}

	hp := waitPhase(t, ns, "hostnet", corev1.PodSucceeded)
	host, _ := os.Hostname()
	want := []string{"hostname=" + host, "1"}
	if got := logLines(podLogs(t, ns, "hostnet", &corev1.PodLogOptions{})); !slices.Equal(got, want) {
		t.Errorf("host-network pod printed %q, want %q (the host's name, and the bridge among its interfaces)", got, want)
	}
	if hp.Status.PodIP != testNodeIP {
		t.Errorf("host-network pod IP %s, want the node's %s", hp.Status.PodIP, testNodeIP)
	}
}

// TestInitContainersRunFirstInOrder: init containers run one after the other, before
// the container.
func TestInitContainersRunFirstInOrder(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	pod := shPod("init", ns, "echo main >> /work/order; cat /work/order")
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	pod.Spec.Containers[0].VolumeMounts = mount
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "first", Image: hostImage, Command: []string{"sh", "-c", "sleep 0.5; echo first >> /work/order"}, VolumeMounts: mount},
		{Name: "second", Image: hostImage, Command: []string{"sh", "-c", "echo second >> /work/order"}, VolumeMounts: mount},
	}
	createPod(t, pod)
	p := waitPhase(t, ns, "init", corev1.PodSucceeded)
	if got, want := logLines(podLogs(t, ns, "init", &corev1.PodLogOptions{})), []string{"first", "second", "main"}; !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %s: %+v, want Completed", s.Name, s.State)
		}
	}
	if condition(p, corev1.PodInitialized) != corev1.ConditionTrue {
		t.Errorf("Initialized %s, want True", condition(p, corev1.PodInitialized))
	}

	// A failing init container fails a Never pod; the container never runs.
	failing := shPod("init-fails", ns, "echo should not run")
	failing.Spec.InitContainers = []corev1.Container{{Name: "boom", Image: hostImage, Command: []string{"sh", "-c", "exit 4"}}}
	createPod(t, failing)
	p = waitPhase(t, ns, "init-fails", corev1.PodFailed)
	if s := containerStatus(p.Status.ContainerStatuses, "main"); s.State.Waiting == nil || s.RestartCount != 0 {
		t.Errorf("container after a failed init: %+v, want never started", s.State)
	}
	if term := p.Status.InitContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 4 {
		t.Errorf("init container: %+v, want exit 4", p.Status.InitContainerStatuses[0].State)
	}
}
