package node_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBinary: the tfk8s-node command registers its Node from a kubeconfig and flags,
// and on SIGTERM marks it NotReady, removes its bridge and state, and exits 0.
func TestBinary(t *testing.T) {
	t.Parallel()
	const (
		name   = "tfk8s-test-node-3"
		bridge = "tfk8st2"
	)
	bin := filepath.Join(t.TempDir(), "tfk8s-node")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/tfk8s/tfk8s/cmd/tfk8s-node").CombinedOutput(); err != nil {
		t.Fatalf("building tfk8s-node: %v\n%s", err, out)
	}
	state, err := os.MkdirTemp("/var/lib", "tfk8s-node-test-3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Cleanup(func() { _ = clientset.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })

	var output bytes.Buffer
	cmd := exec.Command(bin, "--kubeconfig", cp.Kubeconfig(), "--node-name", name, "--state-dir", state,
		"--pod-cidr", "10.252.0.0/24", "--bridge", bridge, "--cluster-dns", "10.96.0.10", "--gpus", "1")
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("tfk8s-node output:\n%s", output.String())
		}
	})

	if err := waitNodeReady(context.Background(), name, exited); err != nil {
		t.Fatal(err)
	}
	n, err := clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gpus := n.Status.Capacity["nvidia.com/gpu"]; gpus.Value() != 1 || n.Spec.PodCIDR != "10.252.0.0/24" || n.Status.Addresses[0].Address != "10.252.0.1" {
		t.Errorf("node from flags: gpus %s podCIDR %s addresses %v", gpus.String(), n.Spec.PodCIDR, n.Status.Addresses)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("tfk8s-node exited with %v after SIGTERM, want 0", err)
		}
		exited <- err // for the cleanup
	case <-time.After(time.Minute):
		t.Fatal("tfk8s-node did not exit within a minute of SIGTERM")
	}
	n, err = clientset.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeReady(n); got != corev1.ConditionFalse {
		t.Errorf("node Ready %s after SIGTERM, want False", got)
	}
	if left := leftovers(state, bridge, nil); len(left) > 0 {
		t.Errorf("tfk8s-node left behind: %v", left)
	}
}
