package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// leftNetwork lists what a cluster on bridge left on the host's network: the bridge
// (with it would go the nodes' veths and the routes to their pods). The nodes' and
// pods' own network namespaces go with their processes.
func leftNetwork(bridge string) []string {
	if _, err := net.InterfaceByName(bridge); err == nil {
		return []string{"bridge " + bridge}
	}
	return nil
}

// keepLogs copies the components' logs out of the test's temporary directory, which
// the testing package removes, and says where they are.
func keepLogs(t *testing.T, dir string) {
	keep, err := os.MkdirTemp("", "tfk8s-e2e-logs-")
	if err != nil {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "cluster", "*.log"))
	for _, l := range logs {
		_ = exec.Command("cp", l, keep).Run()
	}
	t.Logf("component logs kept in %s", keep)
}

// checkNodeReady wants the node Ready, as the API server reports it.
func checkNodeReady(ctx context.Context, t *testing.T, kubeconfig, name string) {
	cs := clientset(t, kubeconfig)
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	t.Errorf("node %s is not Ready: %+v", name, node.Status.Conditions)
}

// checkPodReachesServices runs a pod that resolves the kubernetes Service through the
// cluster DNS and connects to S3 on the bridge, and reads its log through the API
// server (as kubectl logs does, through the node's kubelet API). It returns the pod's
// UID, whose network must be gone after down.
func checkPodReachesServices(ctx context.Context, t *testing.T, kubeconfig, s3Endpoint string) string {
	cs := clientset(t, kubeconfig)
	host, port, _ := net.SplitHostPort(s3Endpoint)
	script := "import socket\n" +
		"print('kubernetes', socket.gethostbyname('kubernetes.default'))\n" +
		"socket.create_connection(('" + host + "', " + port + "), timeout=5).close()\n" +
		"print('s3 reachable')\n"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-probe", Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "probe", Image: images.Python, Command: []string{"python3", "-c", script}}},
		},
	}
	// Pods are refused until kube-controller-manager has made the default ServiceAccount.
	var uid string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return false, nil
		}
		uid = string(created.UID)
		return true, nil
	})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, lerr := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("pod phase %s (%v); logs (%v):\n%s", phase, err, lerr, logs)
	}
	if lerr != nil {
		t.Fatalf("reading the pod's logs through the API server: %v", lerr)
	}
	for _, want := range []string{"kubernetes 10.96.0.1", "s3 reachable"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("pod logs lack %q:\n%s", want, logs)
		}
	}
	_ = cs.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
	return uid
}

// startSleeper runs a pod that sleeps, so that down has a running pod to stop, and
// returns its UID once it runs.
func startSleeper(ctx context.Context, t *testing.T, kubeconfig string) string {
	cs := clientset(t, kubeconfig)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-sleeper", Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](2), // sleep as pid 1 ignores SIGTERM
			Containers:                    []corev1.Container{{Name: "sleep", Image: images.Python, Command: []string{"sleep", "3600"}}},
		},
	}
	created, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s to run: %v", pod.Name, err)
	}
	return string(created.UID)
}

// binDirWithBrokenController makes a binary directory with binDir's binaries but a
// tfk8s-controller that exits at once with an error.
func binDirWithBrokenController(t *testing.T, binDir string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(binDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "tfk8s-controller" { // and cni/, the node's plugins
			if err := os.Symlink(filepath.Join(binDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	script := "#!/bin/sh\necho no controller today >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "tfk8s-controller"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// clientset reaches the cluster through kubeconfig.
func clientset(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cs, err := newClientset(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// newClientset reaches the cluster through kubeconfig.
func newClientset(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// upForTest brings a local cluster up with opts in a temporary directory, on free ports,
// and brings it down when the test ends; a failed test first prints the diagnosis of
// the cluster and keeps the component logs. afterDown, if set, runs once the cluster is
// down, to check what it left. It returns the options completed with the directory,
// ports and user config file. The state directory is not under /tmp, which containers
// see as their own tmpfs: that the node hides it from pods is tested for real.
func upForTest(ctx context.Context, t *testing.T, opts localcluster.Options, afterDown func()) (localcluster.Options, *localcluster.Status) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("test/e2e must run as root: the local cluster creates a bridge, network namespaces and mounts")
	}
	dir, err := os.MkdirTemp("/var/lib", "tfk8s-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	opts.Dir = dir
	opts.UserConfigFile = filepath.Join(t.TempDir(), "config")
	opts.Ports = freePorts(t)
	opts.Timeout = 3 * time.Minute
	opts.Progress = testWriter{t}
	opts.UnsafeNoFsync = true
	t.Cleanup(func() {
		if t.Failed() {
			diagnose(t, filepath.Join(opts.Dir, "kubeconfig"), opts.Dir, true)
		}
		// Whatever happened, nothing stays running.
		if err := localcluster.Down(context.Background(), opts); err != nil {
			t.Errorf("down at cleanup: %v", err)
		}
		if afterDown != nil {
			afterDown()
		}
		if t.Failed() {
			keepLogs(t, opts.Dir)
		}
	})
	start := time.Now()
	st, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %v", time.Since(start).Round(time.Millisecond))
	return opts, st
}
