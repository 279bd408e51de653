package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// upstreamCluster is a local cluster of two upstream nodes with two fake GPUs each.
type upstreamCluster struct {
	opts       localcluster.Options
	kubeconfig string
	cs         *kubernetes.Clientset
	// nodes are the Nodes' names, first node first.
	nodes []string
	// lastLogs are the logs of the containers of the pod run last, by name.
	lastLogs map[string]string
}

// TestUpstreamNode runs pods on two upstream nodes (kubelet, containerd, kube-proxy)
// and checks what a user, or a hostile tenant, would try.
func TestUpstreamNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	opts, _ := upForTest(ctx, t, localcluster.Options{Nodes: 2, GPUs: 2}, nil)
	kubeconfig := filepath.Join(opts.Dir, "kubeconfig")
	c := &upstreamCluster{
		opts: opts, kubeconfig: kubeconfig, cs: clientset(t, kubeconfig),
		nodes: []string{localcluster.DefaultNodeName, localcluster.DefaultNodeName + "-2"},
	}
	for _, n := range c.nodes {
		checkNodeReady(ctx, t, kubeconfig, n)
	}
	t.Run("pods on two nodes reach each other, DNS and the kubernetes Service", c.testPodNetwork)
	t.Run("a subPath symlink out of an emptyDir is refused", c.testSubPathEscapeRefused)
	t.Run("RuntimeDefault seccomp is in force", c.testSeccomp)
	t.Run("exec and logs reach the container", c.testExecAndLogs)
	t.Run("a pod reaches no service on the host's loopback", c.testHostLoopbackHidden)
	t.Run("each container gets GPUs of its own", c.testDistinctGPUs)
	t.Run("a pod reaches a server outside the cluster through the host's NAT", c.testOutboundNAT)
	t.Run("a pod reaches the host address only on the API server, DNS and S3", c.testHostPortsFiltered)
	t.Run("a pod reaches no link-local address nor the host's own, unless exposed", c.testHostNetHidden)
	t.Run("a hostPath outside the allowed ones is refused", c.testHostPathRefused)
}

// podOn is a pod of the Python image on the named node running command.
func podOn(name, node string, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []corev1.Container{{Name: "main", Image: images.Python, Command: command}},
		},
	}
}

// run creates pod, waits until it has ended, deletes it, and returns its phase and
// its first container's log; lastLogs then holds every container's.
func (c *upstreamCluster) run(ctx context.Context, t *testing.T, pod *corev1.Pod) (corev1.PodPhase, string) {
	t.Helper()
	pods := c.cs.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	defer pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	got := c.waitPod(ctx, t, pod.Name, "to end", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	c.lastLogs = map[string]string{}
	for _, ctr := range pod.Spec.Containers {
		logs, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{Container: ctr.Name}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("reading the log of pod %s, container %s: %v", pod.Name, ctr.Name, err)
		}
		c.lastLogs[ctr.Name] = string(logs)
	}
	return got.Status.Phase, c.lastLogs[pod.Spec.Containers[0].Name]
}

// waitPod polls pod name until done says so, for at most three minutes.
func (c *upstreamCluster) waitPod(ctx context.Context, t *testing.T, name, what string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if done(p) {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pod %s did not come %s in 3m; last status: %+v", name, what, last)
	return nil
}

// testPodNetwork: a pod on the second node fetches a page from a pod on the first
// by its address, resolves the kubernetes Service by name and gets an HTTP answer
// from the API server through its ClusterIP.
func (c *upstreamCluster) testPodNetwork(t *testing.T) {
	ctx := t.Context()
	pods := c.cs.CoreV1().Pods("default")
	server := podOn("web", c.nodes[0], "python3", "-m", "http.server", "8080")
	if _, err := pods.Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer pods.Delete(context.Background(), server.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	running := c.waitPod(ctx, t, server.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" })
	script := fmt.Sprintf(`import socket, ssl, time, urllib.request, urllib.error
for attempt in range(50):
    try:
        print("web", urllib.request.urlopen("http://%s:8080/", timeout=2).status, flush=True)
        break
    except OSError as e:
        time.sleep(0.2)
else:
    print("web unreachable", e, flush=True)
print("dns", socket.gethostbyname("kubernetes.default.svc.%s"), flush=True)
try:
    code = urllib.request.urlopen("https://kubernetes.default.svc/version", context=ssl._create_unverified_context(), timeout=5).status
except urllib.error.HTTPError as e:
    code = e.code
print("apiserver", code, flush=True)
`, running.Status.PodIP, localcluster.DefaultClusterDomain)
	phase, log := c.run(ctx, t, podOn("client", c.nodes[1], "python3", "-c", script))
	t.Logf("client (%s):\n%s", phase, log)
	for _, want := range []string{"web 200", "dns 10.96.0.1\n", "apiserver "} {
		if !strings.Contains(log, want) {
			t.Errorf("the client's log lacks %q", want)
		}
	}
}

// testSubPathEscapeRefused: an init container links the host's root into an emptyDir;
// the main container mounting that link as a subPath is refused by the kubelet, and
// never reads the cluster's admin kubeconfig.
func (c *upstreamCluster) testSubPathEscapeRefused(t *testing.T) {
	ctx := t.Context()
	pod := podOn("escape", c.nodes[0], "cat", "/h"+c.kubeconfig)
	pod.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.InitContainers = []corev1.Container{{Name: "link", Image: images.Python, Command: []string{"ln", "-s", "/", "/s/host"},
		VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/h", SubPath: "host"}}
	pods := c.cs.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	got := c.waitPod(ctx, t, pod.Name, "refused or ended", func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" {
				return true
			}
		}
		return false
	})
	if got.Status.Phase == corev1.PodSucceeded {
		t.Fatalf("the container read the admin kubeconfig through a subPath symlink")
	}
	w := got.Status.ContainerStatuses[0].State.Waiting
	if w == nil || !strings.Contains(w.Message, "subPath") {
		t.Errorf("container status %+v, want CreateContainerConfigError naming the subPath", got.Status.ContainerStatuses[0].State)
	}
}

// testSeccomp: a container whose pod asks for the RuntimeDefault profile runs in
// seccomp's filter mode (2), and may not create a user namespace.
func (c *upstreamCluster) testSeccomp(t *testing.T) {
	pod := podOn("seccomp", c.nodes[0], "python3", "-c", `import ctypes, os
print([l for l in open("/proc/self/status") if l.startswith("Seccomp:")][0].strip(), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", "refused" if libc.unshare(0x10000000) != 0 else "allowed", flush=True)
`)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	phase, log := c.run(t.Context(), t, pod)
	t.Logf("seccomp (%s):\n%s", phase, log)
	for _, want := range []string{"Seccomp:\t2", "unshare refused"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// testExecAndLogs: kubectl exec runs a command in a running container and returns its
// output; kubectl logs returns what the container printed.
func (c *upstreamCluster) testExecAndLogs(t *testing.T) {
	ctx := t.Context()
	pods := c.cs.CoreV1().Pods("default")
	pod := podOn("shell", c.nodes[1], "sh", "-c", "echo hello from the container; exec sleep 3600")
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	c.waitPod(ctx, t, pod.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	out, err := c.exec(ctx, pod.Name, "cat", "/etc/hostname")
	if err != nil || strings.TrimSpace(out) != pod.Name {
		t.Errorf("exec cat /etc/hostname: %q, %v; want %q", out, err, pod.Name)
	}
	var logs []byte
	for range 50 { // the log is written as the container starts
		if logs, err = pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil && len(logs) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if string(logs) != "hello from the container\n" {
		t.Errorf("logs: %q, %v; want the container's line", logs, err)
	}
}

// exec runs command in the first container of the pod, in the default namespace, as
// kubectl exec does, and returns its standard output.
func (c *upstreamCluster) exec(ctx context.Context, pod string, command ...string) (string, error) {
	return execIn(ctx, c.kubeconfig, c.cs, "default", pod, command...)
}

// testHostLoopbackHidden: a server the host runs on 127.0.0.1 is out of a pod's reach,
// whether the pod dials its own loopback or the host's bridge address.
func (c *upstreamCluster) testHostLoopbackHidden(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte("secret\n"))
			conn.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	bridge := strings.TrimSuffix(localcluster.DefaultPodCIDR, "0/24") + "1"
	script := fmt.Sprintf(`import socket
for host in ["127.0.0.1", %q]:
    try:
        s = socket.create_connection((host, %d), timeout=2)
        print(host, "connected", s.recv(16), flush=True)
    except OSError as e:
        print(host, "unreachable:", e, flush=True)
`, bridge, port)
	phase, log := c.run(t.Context(), t, podOn("loopback", c.nodes[0], "python3", "-c", script))
	t.Logf("loopback probe (%s):\n%s", phase, log)
	if strings.Contains(log, "connected") || strings.Count(log, "unreachable") != 2 {
		t.Errorf("a pod reached the host's loopback server on port %d, or did not say", port)
	}
}

// gpuLimit is a container resource asking for n fake GPUs.
func gpuLimit(n int64) corev1.ResourceRequirements {
	q := *resource.NewQuantity(n, resource.DecimalSI)
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": q}}
}

// testDistinctGPUs: two containers of one pod, each asking for one of the node's two
// fake GPUs, see distinct device IDs.
func (c *upstreamCluster) testDistinctGPUs(t *testing.T) {
	ctx := t.Context()
	pod := podOn("gpus", c.nodes[1], "sh", "-c", `echo "$NVIDIA_VISIBLE_DEVICES"`)
	pod.Spec.Containers[0].Resources = gpuLimit(1)
	second := pod.Spec.Containers[0]
	second.Name = "second"
	pod.Spec.Containers = append(pod.Spec.Containers, second)
	phase, first := c.run(ctx, t, pod)
	if phase != corev1.PodSucceeded {
		t.Fatalf("pod gpus %s: %s", phase, first)
	}
	logs := map[string]string{}
	for _, name := range []string{"main", "second"} {
		logs[name] = strings.TrimSpace(c.lastLogs[name])
	}
	t.Logf("NVIDIA_VISIBLE_DEVICES: %v", logs)
	for name, ids := range logs {
		if ids != "0" && ids != "1" {
			t.Errorf("container %s sees GPUs %q, want one of the node's two, 0 or 1", name, ids)
		}
	}
	if logs["main"] == logs["second"] {
		t.Errorf("both containers see GPU %q", logs["main"])
	}
}

// testHostPathRefused: even in a namespace whose Pod Security level allows hostPath, a
// pod mounting the host's /etc is refused at admission, naming the path.
func (c *upstreamCluster) testHostPathRefused(t *testing.T) {
	ctx := t.Context()
	const ns = "e2e-privileged"
	_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	pod := podOn("hostetc", c.nodes[0], "cat", "/host/shadow")
	pod.Namespace = ns
	pod.Spec.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/host"}}
	for range 150 { // until the namespace's default ServiceAccount exists
		_, err = c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "service account") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostPath /etc is not allowed") {
		t.Errorf("creating a pod mounting the host's /etc: %v, want Forbidden naming hostPath /etc", err)
	}
}

// testOutboundNAT: a pod fetches from a server beyond the host (a namespace of the
// test's own, on a new uplink that the next up takes), and the server sees the host's
// address, not the pod's. A further up changes nothing, and the host still forwards
// nothing of its own accord (net.ipv4.ip_forward stays 0).
func (c *upstreamCluster) testOutboundNAT(t *testing.T) {
	ctx := t.Context()
	inet := newInternet(t)
	opts := c.opts
	opts.Progress = testWriter{t}
	if _, err := localcluster.Up(ctx, opts); err != nil {
		t.Fatalf("up again, with a new uplink: %v", err)
	}
	sum := sha256.Sum256([]byte(c.opts.Dir))
	table := "tfk8s-" + hex.EncodeToString(sum[:])[:8]
	before := hostState(t, table, inet.hostVeth)
	if _, err := localcluster.Up(ctx, opts); err != nil {
		t.Fatalf("up a third time: %v", err)
	}
	if after := hostState(t, table, inet.hostVeth); after != before {
		t.Errorf("a further up changed the host:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(before, "ip_forward 0\n") || !strings.Contains(before, inet.hostVeth+".forwarding 1\n") {
		t.Errorf("want ip_forward 0 and forwarding on for the uplink %s:\n%s", inet.hostVeth, before)
	}
	host, port, _ := net.SplitHostPort(inet.server)
	script := fmt.Sprintf(`import socket
s = socket.create_connection((%q, %s), timeout=5)
print("server says", s.makefile().readline().strip(), flush=True)
s.close()
`, host, port)
	phase, log := c.run(ctx, t, podOn("outbound", c.nodes[1], "python3", "-c", script))
	t.Logf("outbound (%s):\n%s", phase, log)
	if want := "server says peer " + inet.hostAddr + "\n"; !strings.Contains(log, want) {
		t.Errorf("the pod's log lacks %q", want)
	}
	select {
	case peer := <-inet.peers:
		if peer != inet.hostAddr {
			t.Errorf("the server saw %s, want the host's %s", peer, inet.hostAddr)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the server saw no connection")
	}
}

// hostState is the cluster's nftables table with its rule handles and counters, the
// host's ip_forward and the uplink's forwarding flag.
func hostState(t *testing.T, table, uplink string) string {
	t.Helper()
	out, err := exec.Command("nft", "-a", "list", "table", "ip", table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table ip %s: %v: %s", table, err, out)
	}
	state := string(out)
	for _, sysctl := range []struct{ name, path string }{
		{"ip_forward", "/proc/sys/net/ipv4/ip_forward"},
		{uplink + ".forwarding", "/proc/sys/net/ipv4/conf/" + uplink + "/forwarding"},
	} {
		v, err := os.ReadFile(sysctl.path)
		if err != nil {
			t.Fatal(err)
		}
		state += sysctl.name + " " + string(v)
	}
	return state
}

// testHostPortsFiltered: of the host address, a pod and a hostNetwork pod reach the
// API server, DNS and S3 only: neither the registry, which the host reaches and the
// nodes' containerd pulls from, nor a server the host runs on every address.
func (c *upstreamCluster) testHostPortsFiltered(t *testing.T) {
	ctx := t.Context()
	bridge := netip.MustParsePrefix(localcluster.DefaultPodCIDR).Addr().Next().String()
	registry := net.JoinHostPort(bridge, fmt.Sprint(c.opts.Ports.Registry))
	if conn, err := net.DialTimeout("tcp", registry, 2*time.Second); err != nil {
		t.Fatalf("the host does not reach its registry at %s: %v", registry, err)
	} else {
		conn.Close()
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := c.opts.Ports
	script := fmt.Sprintf(`import socket
for name, port in [("registry", %d), ("apiserver", %d), ("dns", %d), ("s3", %d), ("hostsvc", %d)]:
    try:
        socket.create_connection((%q, port), timeout=2).close()
        print(name, "connected", flush=True)
    except OSError as e:
        print(name, "unreachable:", e, flush=True)
`, p.Registry, p.APIServer, p.DNS, p.S3, ln.Addr().(*net.TCPAddr).Port, bridge)
	want := "registry unreachable: timed out\napiserver connected\ndns connected\ns3 connected\nhostsvc unreachable: timed out\n"
	hostNet := podOn("probe-hostnet", c.nodes[0], "python3", "-c", script)
	hostNet.Spec.HostNetwork = true
	// Pod Security's baseline refuses hostNetwork pods; the test lifts it for one.
	c.labelDefaultNamespace(ctx, t, `"privileged"`)
	defer c.labelDefaultNamespace(context.Background(), t, "null")
	for _, pod := range []*corev1.Pod{podOn("probe", c.nodes[0], "python3", "-c", script), hostNet} {
		phase, log := c.run(ctx, t, pod)
		t.Logf("%s (%s):\n%s", pod.Name, phase, log)
		if log != want {
			t.Errorf("pod %s printed:\n%swant:\n%s", pod.Name, log, want)
		}
	}
	logs, err := os.ReadFile(filepath.Join(c.opts.Dir, "cluster", "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	pulled := slices.ContainsFunc(strings.Split(string(logs), "\n"), func(line string) bool {
		return strings.HasPrefix(line, "10.244.0.2 - - ") && strings.Contains(line, "/v2/tfk8s/python/")
	})
	if !pulled {
		t.Errorf("the registry's log shows no request for the python image from the first node's containerd (10.244.0.2)")
	}
}

// labelDefaultNamespace sets the default namespace's Pod Security enforce label to
// value, a JSON string, or removes it (null).
func (c *upstreamCluster) labelDefaultNamespace(ctx context.Context, t *testing.T, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":%s}}}`, value)
	if _, err := c.cs.CoreV1().Namespaces().Patch(ctx, "default", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace default: %v", err)
	}
}
