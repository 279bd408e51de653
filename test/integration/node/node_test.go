package node_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// TestNodeRegistersReady: the Node is Ready, with the host's capacity, its GPUs, its
// address, kubelet port and pod CIDR, and keeps its Lease.
func TestNodeRegistersReady(t *testing.T) {
	ctx := context.Background()
	n, err := clientset.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nodeReady(n); got != corev1.ConditionTrue {
		t.Errorf("Ready %s, want True", got)
	}
	capacity := n.Status.Capacity
	if got := capacity.Cpu().Value(); got != int64(runtime.NumCPU()) {
		t.Errorf("cpu capacity %d, want %d", got, runtime.NumCPU())
	}
	if got := capacity.Memory().Value(); got < 256<<20 {
		t.Errorf("memory capacity %d, want the host's", got)
	}
	if got := capacity.Pods().Value(); got != 110 {
		t.Errorf("pods capacity %d, want 110", got)
	}
	if got := capacity[corev1.ResourceName("nvidia.com/gpu")]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("nvidia.com/gpu capacity %s, want 2", got.String())
	}
	if len(n.Status.Addresses) == 0 || n.Status.Addresses[0].Type != corev1.NodeInternalIP || n.Status.Addresses[0].Address != testNodeIP {
		t.Errorf("addresses %v, want InternalIP %s", n.Status.Addresses, testNodeIP)
	}
	if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != 10250 {
		t.Errorf("kubelet port %d, want 10250", got)
	}
	if n.Spec.PodCIDR != testCIDR {
		t.Errorf("podCIDR %q, want %q", n.Spec.PodCIDR, testCIDR)
	}
	var lease *coordinationv1.Lease
	testutil.Eventually(t, "the node lease", func(ctx context.Context) (bool, error) {
		lease, err = clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil, err
	})
	if lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > 30*time.Second {
		t.Errorf("lease renewed at %v, want within the last renew interval", lease.Spec.RenewTime)
	}
	if len(lease.OwnerReferences) != 1 || lease.OwnerReferences[0].UID != n.UID {
		t.Errorf("lease owners %v, want the Node", lease.OwnerReferences)
	}
}
