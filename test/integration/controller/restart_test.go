package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// startSlowController runs a controller that creates pods two at a time at 40 per
// second, so that a test can stop it in the middle of creating a job's pods.
func startSlowController(t *testing.T) (stop func()) {
	t.Helper()
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 40, 1
	return startControllerWith(t, cfg, controller.Options{PodCreateConcurrency: 2})
}

// TestControllerRestartMidCreation stops the controller while it creates the pods of a
// 200-replica job and starts a fresh one: the job ends up with exactly 200 pods, and
// none of those created before the crash is replaced.
func TestControllerRestartMidCreation(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	stop := startSlowController(t)
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("big", ns).PS(2).Workers(198).Obj()); err != nil {
		t.Fatal(err)
	}
	var before map[string]*corev1.Pod
	testutil.Eventually(t, "the first pods", func(ctx context.Context) (bool, error) {
		var err error
		before, err = jobPods(ctx, ns, "big")
		return len(before) >= 20, err
	})
	stop()
	before, err := jobPods(ctx, ns, "big")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) >= 200 {
		t.Fatalf("all %d pods existed before the crash; the test proves nothing", len(before))
	}
	t.Logf("controller stopped with %d of 200 pods created", len(before))

	startController(t)
	var after map[string]*corev1.Pod
	testutil.Eventually(t, "200 pods", func(ctx context.Context) (bool, error) {
		var err error
		after, err = jobPods(ctx, ns, "big")
		return len(after) == 200, err
	})
	for name, pod := range before {
		if after[name] == nil || after[name].UID != pod.UID {
			t.Errorf("pod %s was replaced after the restart", name)
		}
	}
	for i := range 198 {
		if after[fmt.Sprintf("big-worker-%d", i)] == nil {
			t.Errorf("worker %d missing", i)
		}
	}
	// A little later, still exactly 200: nothing thrashes.
	waitCondition(t, ns, "big", tfv1.JobCreated)
	if now, _ := jobPods(ctx, ns, "big"); len(now) != 200 {
		t.Errorf("%d pods, want 200", len(now))
	}
}

// TestOutcomeCountedAcrossRestart: a worker finishes and its pod is deleted while the
// controller is down. The tracking finalizer keeps the pod until a fresh controller has
// recorded the success, so the job still succeeds and the worker is not run again.
func TestOutcomeCountedAcrossRestart(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	stop := startController(t)
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("crashy", ns).PS(1).Workers(2).Obj()); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "crashy", "crashy-ps-0", "crashy-worker-0", "crashy-worker-1")
	kubelet.SetRunning(t, ns, "crashy-ps-0", "crashy-worker-0", "crashy-worker-1")
	waitCondition(t, ns, "crashy", tfv1.JobRunning)
	stop()

	kubelet.SetExited(t, ns, "crashy-worker-0", 0)
	if err := k8sClient.Delete(ctx, pods["crashy-worker-0"]); err != nil {
		t.Fatal(err)
	}
	startController(t)
	job := waitCondition(t, ns, "crashy", tfv1.JobSucceeded)
	if got := replicaStatus(job, tfv1.ReplicaTypeWorker).SucceededIndexes; got != "0" {
		t.Errorf("succeeded worker indexes %q, want 0", got)
	}
	// Worker 0's pod is gone for good, the PS and worker 1 are cleaned up.
	waitPods(t, ns, "crashy")
}

// TestOrphanedPodsReleasedOnRestart: the job is deleted while the controller is down;
// a fresh controller removes the tracking finalizers so garbage collection can finish.
func TestOrphanedPodsReleasedOnRestart(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx := context.Background()
	stop := startController(t)
	job := testutil.MakeTFJob("orphan", ns).Workers(3).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "orphan", "orphan-worker-0", "orphan-worker-1", "orphan-worker-2")
	stop()
	if err := k8sClient.Delete(ctx, job, client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the job gone", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "orphan"}, &tfv1.TFJob{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	startController(t)
	waitPods(t, ns, "orphan")
}
