// Package node_test runs tfk8s-node against a real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with real runc containers, network namespaces
// and a bridge. It must run as root; runc is installed if missing.
package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/node"
)

// The node under test.
const (
	nodeName    = "tfk8s-test-node"
	testBridge  = "tfk8st0"
	testCIDR    = "10.250.0.0/24"
	testNodeIP  = "10.250.0.1"
	testGPUs    = 2
	clusterDNS  = "10.96.0.10"
	testBackoff = 300 * time.Millisecond
	// hostImage is the image name the nodes run on the host's filesystem
	// (--host-image), as the docs name it; every other image is pulled.
	hostImage = "tfk8s.io/host"
)

var (
	cp        *controlplane.ControlPlane
	clientset kubernetes.Interface
	c         client.Client
	stateDir  string
	// maskedDir is a directory the node is told to hide from containers, as a local
	// cluster hides its state directory.
	maskedDir string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "test/integration/node must run as root: the node creates network namespaces, mounts and runc containers")
		return 1
	}
	if err := ensureRunc(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	pkiDir, err := os.MkdirTemp("", "tfk8s-node-pki-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(pkiDir)
	// kube-apiserver authenticates to the node's kubelet API with a client certificate.
	pki := controlplane.KubeletClientPKIIn(pkiDir)
	if err := pki.Ensure(24 * time.Hour); err != nil {
		fmt.Fprintf(os.Stderr, "writing the kubelet client certificate: %v\n", err)
		return 1
	}
	cp, err = controlplane.Start(ctx, controlplane.Options{Scheduler: true, ExtraAPIServerArgs: pki.APIServerArgs()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	if clientset, err = kubernetes.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if c, err = client.New(cp.Config, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Not under /tmp, which containers see as their own tmpfs: TestSandbox checks that
	// the node hides its state directory from them.
	if stateDir, err = os.MkdirTemp("/var/lib", "tfk8s-node-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(stateDir)
	if maskedDir, err = os.MkdirTemp("/var/lib", "tfk8s-node-test-masked-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(maskedDir)

	nodeCtx, stopNode := context.WithCancel(ctx)
	defer stopNode()
	nodeErr := make(chan error, 1)
	go func() {
		nodeErr <- node.Run(nodeCtx, node.Options{
			Config:              cp.Config,
			NodeName:            nodeName,
			StateDir:            stateDir,
			PodCIDR:             testCIDR,
			Bridge:              testBridge,
			ClusterDNS:          []string{clusterDNS},
			GPUs:                testGPUs,
			ClientCAFile:        pki.CACert,
			RestartBackoff:      testBackoff,
			ShutdownGracePeriod: 5 * time.Second,
			AllowedHostPaths:    []string{os.TempDir()},
			MaskedPaths:         []string{maskedDir},
			LocalProvisioner:    true,
			HostImages:          []string{hostImage},
			Log:                 zap.New(zap.WriteTo(nodeLog(cp.Dir))),
		})
	}()
	if err := waitNodeReady(ctx, nodeName, nodeErr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stopNode()
		return 1
	}

	code := m.Run()

	stopNode()
	select {
	case err := <-nodeErr:
		if err != nil {
			fmt.Fprintf(os.Stderr, "node: %v\n", err)
			code = 1
		}
	case <-time.After(2 * time.Minute):
		fmt.Fprintln(os.Stderr, "node did not stop within 2 minutes")
		code = 1
	}
	if left := leftovers(stateDir, testBridge, createdPods.uids); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "the node left behind: %v\n", left)
		code = 1
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "control plane and node logs in %s\n", cp.Dir)
		keepLogs(cp.Dir)
	}
	return code
}

// ensureRunc installs runc with apt-get when it is missing.
func ensureRunc() error {
	if _, err := exec.LookPath("runc"); err == nil {
		return nil
	}
	out, err := exec.Command("apt-get", "install", "-y", "runc").CombinedOutput()
	if err != nil {
		upd, _ := exec.Command("apt-get", "update").CombinedOutput()
		out2, err2 := exec.Command("apt-get", "install", "-y", "runc").CombinedOutput()
		if err2 != nil {
			return fmt.Errorf("runc is missing and `apt-get install -y runc` failed: %v\n%s\n%s\n%s", err2, out, upd, out2)
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return fmt.Errorf("runc still missing after apt-get install -y runc: %w", err)
	}
	return nil
}

// nodeLog is the node's log file, beside the control plane's.
func nodeLog(dir string) *os.File {
	f, err := os.Create(filepath.Join(dir, "tfk8s-node.log"))
	if err != nil {
		return os.Stderr
	}
	return f
}

// keepLogs copies the logs of a failed run out of the control plane's directory,
// which Stop removes.
func keepLogs(dir string) {
	dst, err := os.MkdirTemp("", "tfk8s-node-test-logs-")
	if err != nil {
		return
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, src := range matches {
		if data, err := os.ReadFile(src); err == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(src)), data, 0o644)
		}
	}
	fmt.Fprintf(os.Stderr, "logs kept in %s\n", dst)
}

// waitNodeReady waits until the Node is Ready, or the node fails.
func waitNodeReady(ctx context.Context, name string, nodeErr <-chan error) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-nodeErr:
			return false, fmt.Errorf("node exited: %w", err)
		default:
		}
		n, err := clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return nodeReady(n) == corev1.ConditionTrue, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s to be Ready: %w", name, err)
	}
	return nil
}

// nodeReady is the status of a Node's Ready condition.
func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
