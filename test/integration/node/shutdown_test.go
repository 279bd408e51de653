package node_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/node"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// TestNodeShutdown: stopping a node SIGTERMs its pods, fails them as the kubelet's
// graceful shutdown does, marks the Node NotReady and leaves nothing behind: no
// container, mount, network namespace, veth or bridge. It runs a second node, beside
// the one the other tests share.
func TestNodeShutdown(t *testing.T) {
	t.Parallel()
	const (
		name   = "tfk8s-test-node-2"
		bridge = "tfk8st1"
	)
	ns := testutil.Namespace(t, c)
	ctx := context.Background()
	state, err := os.MkdirTemp("/var/lib", "tfk8s-node-test-2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Cleanup(func() {
		_ = clientset.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	var uid types.UID // the pod's, once created
	nodeCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- node.Run(nodeCtx, node.Options{
			Config: cp.Config, NodeName: name, StateDir: state, PodCIDR: "10.251.0.0/24", Bridge: bridge,
			ShutdownGracePeriod: 10 * time.Second, AllowedHostPaths: []string{os.TempDir()}, HostImages: []string{hostImage}, Log: zap.New(zap.WriteTo(nodeLog2(t))),
		})
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("the second node did not stop")
		}
		if left := leftovers(state, bridge, []types.UID{uid}); len(left) > 0 {
			t.Errorf("the second node left behind: %v", left)
		}
	})
	if err := waitNodeReady(ctx, name, done); err != nil {
		t.Fatal(err)
	}

	shared := t.TempDir()
	pod := shPod("worker", ns, `trap 'echo term > /shared/marker; exit 0' TERM; echo up > /shared/marker; while true; do sleep 0.1; done`)
	pod.Spec.NodeName = name
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: shared}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	uid = createPod(t, pod).UID
	marker := filepath.Join(shared, "marker")
	waitPod(t, ns, "worker", 30*time.Second, "up", func(*corev1.Pod) bool { return slices.Equal(readLines(marker), []string{"up"}) })

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("node: %v", err)
		}
		done <- err // for the cleanup
	case <-time.After(time.Minute):
		t.Fatal("the node did not stop within a minute")
	}
	if got := readLines(marker); !slices.Equal(got, []string{"term"}) {
		t.Errorf("marker %q, want the SIGTERM trap's", got)
	}
	p, err := clientset.CoreV1().Pods(ns).Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "Terminated" {
		t.Errorf("pod after node shutdown: %s, want Failed with reason Terminated", describeStatus(p))
	}
	n, err := clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeReady(n); got != corev1.ConditionFalse {
		t.Errorf("node Ready %s after it stopped, want False", got)
	}
	if left := leftovers(state, bridge, []types.UID{uid}); len(left) > 0 {
		t.Errorf("the stopped node left behind: %v", left)
	}
}

// nodeLog2 is the second node's log file, in the test's temporary directory.
func nodeLog2(t *testing.T) *os.File {
	f, err := os.Create(filepath.Join(t.TempDir(), "tfk8s-node-2.log"))
	if err != nil {
		return os.Stderr
	}
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(f.Name())
			t.Logf("second node log:\n%s", data)
		}
		f.Close()
	})
	return f
}
