package controller

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestRetryDelayDoubles: a worker that keeps failing under ExitCode is re-created after
// a delay that doubles with each failure in a row (1s, 2s, 4s with a base of 1s), each
// new pod noting how many failures came before it; a crash loop is not a pod a second.
func TestRetryDelayDoubles(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startControllerWith(t, *cp.Config, controller.Options{RetryBackoff: time.Second})
	ctx := context.Background()
	job := testutil.MakeTFJob("loop", ns).Workers(2).BackoffLimit(5).
		RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "loop", "loop-worker-0", "loop-worker-1")
	kubelet.SetRunning(t, ns, "loop-worker-0", "loop-worker-1")
	uid := pods["loop-worker-1"].UID

	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		kubelet.SetExited(t, ns, "loop-worker-1", 137)
		failed := &corev1.Pod{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "loop-worker-1"}, failed); err != nil {
			t.Fatal(err)
		}
		finished := failed.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time
		next := waitReplacement(t, ns, "loop-worker-1", uid)
		// Both times are whole seconds, and the delay too: no rounding can hide a
		// replacement made early.
		if gap := next.CreationTimestamp.Sub(finished); gap < want {
			t.Errorf("failure %d: replaced %v after the container ended, want at least %v", i+1, gap, want)
		}
		if got, want := next.Annotations[tfv1.AnnotationFailuresInARow], strconv.Itoa(i+1); got != want {
			t.Errorf("failure %d: replacement's %s = %q, want %q", i+1, tfv1.AnnotationFailuresInARow, got, want)
		}
		uid = next.UID
		kubelet.SetRunning(t, ns, "loop-worker-1")
	}
	got := waitCondition(t, ns, "loop", tfv1.JobRunning)
	if r := replicaStatus(got, tfv1.ReplicaTypeWorker).Restarts; r != 3 {
		t.Errorf("worker restarts = %d, want 3", r)
	}
	if msg := eventMessage(t, ns, got.UID, tfv1.ReasonRetryBackoff); msg == "" {
		t.Errorf("no %s event", tfv1.ReasonRetryBackoff)
	}
}

// waitReplacement waits for the pod name to exist again with another UID than uid.
func waitReplacement(t *testing.T, ns, name string, uid types.UID) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testutil.Eventually(t, name+" to be re-created", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
		return err == nil && pod.UID != uid && pod.DeletionTimestamp == nil, client.IgnoreNotFound(err)
	})
	return pod
}
