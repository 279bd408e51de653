package cli

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// kubelet plays the kubelet: it writes the pod status a kubelet would.
func kubelet() testutil.Kubelet { return testutil.Kubelet{Client: k8sClient} }

// bind assigns a pod to a node, as the scheduler does: describe shows the node, and
// logs looks for a pod's live log only once it is placed.
func bind(t *testing.T, ns, pod, node string) {
	t.Helper()
	err := clientset.CoreV1().Pods(ns).Bind(context.Background(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod, node, err)
	}
}
