package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/testutil"
)

// gpuPod requests one nvidia.com/gpu and prints the devices it was given.
func gpuPod(name, ns string) *corev1.Pod {
	p := shPod(name, ns, `echo "$NVIDIA_VISIBLE_DEVICES $CUDA_VISIBLE_DEVICES"; sleep 600`)
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	return p
}

// gpuIndex waits for a GPU pod to print its device and returns it.
func gpuIndex(t *testing.T, ns, name string) string {
	t.Helper()
	var out string
	testutil.Eventually(t, name+" to print its GPU", func(ctx context.Context) (bool, error) {
		p, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("pod not running: %s", describeStatus(p))
		}
		out = strings.TrimSpace(podLogs(t, ns, name, &corev1.PodLogOptions{}))
		return out != "", nil
	})
	nvidia, cuda, _ := strings.Cut(out, " ")
	if nvidia != cuda {
		t.Errorf("%s: NVIDIA_VISIBLE_DEVICES %q but CUDA_VISIBLE_DEVICES %q", name, nvidia, cuda)
	}
	return nvidia
}

// TestGPUs: with --gpus 2, two pods asking for one GPU each get distinct indices; a
// third waits unschedulable until one of them goes, then gets the freed index.
func TestGPUs(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	createPod(t, gpuPod("gpu-a", ns))
	createPod(t, gpuPod("gpu-b", ns))
	a, b := gpuIndex(t, ns, "gpu-a"), gpuIndex(t, ns, "gpu-b")
	if a == b || (a != "0" && a != "1") || (b != "0" && b != "1") {
		t.Fatalf("GPU indices %q and %q, want 0 and 1", a, b)
	}
	createPod(t, gpuPod("gpu-c", ns))
	waitPod(t, ns, "gpu-c", 30*time.Second, "unschedulable", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	if err := clientset.CoreV1().Pods(ns).Delete(context.Background(), "gpu-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := gpuIndex(t, ns, "gpu-c"); got != a {
		t.Errorf("the third pod got GPU %q, want the freed %q", got, a)
	}
}

// TestGPUsOfFinishedPod: a pod that has run to completion, and is kept, holds no GPU:
// the scheduler counts none for it, so the node must not either. A pod wanting both
// GPUs runs right after one that used a GPU has Succeeded. Not parallel: it needs
// both of the node's GPUs free.
func TestGPUsOfFinishedPod(t *testing.T) {
	ns := testutil.Namespace(t, c)
	done := gpuPod("gpu-done", ns)
	done.Spec.Containers[0].Command = []string{"sh", "-c", `echo "$NVIDIA_VISIBLE_DEVICES"`}
	createPod(t, done)
	waitPod(t, ns, "gpu-done", time.Minute, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	both := gpuPod("gpu-both", ns)
	both.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	createPod(t, both)
	if got := gpuIndex(t, ns, "gpu-both"); got != "0,1" {
		t.Errorf("the pod wanting both GPUs got %q, want 0,1", got)
	}
}
