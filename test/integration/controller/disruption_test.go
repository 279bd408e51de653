package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestEvictionIsADisruption checks that a running worker evicted through the Eviction
// API (as a node drain or Kueue does; the API server marks the pod DisruptionTarget,
// EvictionByEvictionAPI) is re-created, and that a job with backoffLimit 0 and
// restartPolicy Never does not fail for it: the status counts a disruption, not a
// restart, and an event says so.
func TestEvictionIsADisruption(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("drained", ns).Workers(2).Obj()
	job.Spec.RunPolicy.BackoffLimit = ptr.To[int32](0)
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].RestartPolicy = tfv1.RestartPolicyNever
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, job.Name, "drained-worker-0", "drained-worker-1")
	for name := range pods {
		kubelet.Bind(t, ns, name, "node-a")
	}
	kubelet.SetRunning(t, ns, "drained-worker-0", "drained-worker-1")
	waitCondition(t, ns, job.Name, tfv1.JobRunning)

	victim := pods["drained-worker-1"]
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}}
	if err := k8sClient.SubResource("eviction").Create(ctx, victim, eviction); err != nil {
		t.Fatalf("evicting %s: %v", victim.Name, err)
	}
	finishTermination(t, k8sClient, ns, victim.Name)

	replacement := waitReplacement(t, ns, victim.Name, victim.UID)
	t.Logf("%s re-created (uid %s, was %s)", replacement.Name, replacement.UID, victim.UID)
	job = waitJob(t, ns, job.Name, "one disruption counted", func(j *tfv1.TFJob) bool {
		return replicaStatus(j, tfv1.ReplicaTypeWorker).Disruptions == 1
	})
	if isTrue(t, ns, job.Name, tfv1.JobFailed) {
		t.Fatalf("job failed after an eviction: %+v", conditionOf(job, tfv1.JobFailed))
	}
	if rs := replicaStatus(job, tfv1.ReplicaTypeWorker); rs.Restarts != 0 || rs.LastFailure != nil {
		t.Errorf("worker status %+v: want no restart and no failure for an eviction", rs)
	}
	msg := eventMessage(t, ns, job.UID, tfv1.ReasonDisrupted)
	if !strings.Contains(msg, "drained-worker-1 was disrupted (EvictionByEvictionAPI)") || !strings.Contains(msg, "not counted against backoffLimit") {
		t.Errorf("Disrupted event %q: want the pod, EvictionByEvictionAPI and that it is not counted", msg)
	}
	t.Logf("event %s: %s", tfv1.ReasonDisrupted, msg)

	// The job goes on: the replacement runs and the job succeeds.
	kubelet.Bind(t, ns, replacement.Name, "node-a")
	kubelet.SetRunning(t, ns, replacement.Name)
	kubelet.SetExited(t, ns, "drained-worker-0", 0)
	kubelet.SetExited(t, ns, replacement.Name, 0)
	waitCondition(t, ns, job.Name, tfv1.JobSucceeded)
}

// finishTermination plays the kubelet of a pod being deleted gracefully: once the pod is
// terminating, it confirms the deletion (grace period 0), as the kubelet does when the
// containers have stopped.
func finishTermination(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	pod := &corev1.Pod{}
	testutil.Eventually(t, name+" to be terminating", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
		return err == nil && pod.DeletionTimestamp != nil, err
	})
	err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if client.IgnoreNotFound(err) != nil {
		t.Fatalf("confirming the deletion of %s: %v", name, err)
	}
}

// TestGangScheduleTimeoutSuspends checks onScheduleTimeout: Suspend: a job whose pods
// were not scheduled in time is suspended, not failed (runPolicy.suspend set, its pods
// deleted, condition Suspended with reason GangScheduleTimeout naming the scheduler's
// reason), and resuming it creates its pods again.
func TestGangScheduleTimeoutSuspends(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := makeGangJob("parked", ns, &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](2),
		OnScheduleTimeout: tfv1.ScheduleTimeoutSuspend})
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, gangPodNames(job.Name)...)
	const verdict = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
	markUnschedulable(t, ns, "parked-worker-0", verdict)
	job = waitCondition(t, ns, job.Name, tfv1.JobSuspended)
	c := conditionOf(job, tfv1.JobSuspended)
	if c.Reason != tfv1.ReasonGangScheduleTimeout || !strings.Contains(c.Message, "parked-worker-0 ("+verdict+")") ||
		!strings.Contains(c.Message, "tfk8s resume") {
		t.Errorf("Suspended condition %s: %s; want %s naming the scheduler's verdict and tfk8s resume", c.Reason, c.Message, tfv1.ReasonGangScheduleTimeout)
	}
	if job.Spec.RunPolicy.Suspend == nil || !*job.Spec.RunPolicy.Suspend {
		t.Errorf("runPolicy.suspend = %v, want true", job.Spec.RunPolicy.Suspend)
	}
	if isTrue(t, ns, job.Name, tfv1.JobFailed) {
		t.Errorf("job failed, want suspended")
	}
	waitPods(t, ns, job.Name)
	t.Logf("%s: %s", c.Reason, c.Message)

	setSuspend(t, ns, job.Name, false)
	waitPods(t, ns, job.Name, gangPodNames(job.Name)...)
	job = waitJob(t, ns, job.Name, "resumed", func(j *tfv1.TFJob) bool { return conditionOf(j, tfv1.JobSuspended).Status == "False" })
	if c := conditionOf(job, tfv1.JobSuspended); c.Reason != tfv1.ReasonResumed {
		t.Errorf("Suspended condition after resume: %+v, want reason %s", c, tfv1.ReasonResumed)
	}
}

// TestOnScheduleTimeoutNeedsTimeout checks that the API server refuses onScheduleTimeout
// without scheduleTimeoutSeconds, naming the field.
func TestOnScheduleTimeoutNeedsTimeout(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := makeGangJob("lost", ns, &tfv1.SchedulingPolicy{OnScheduleTimeout: tfv1.ScheduleTimeoutSuspend})
	err := k8sClient.Create(context.Background(), job)
	const want = "spec.runPolicy.schedulingPolicy.onScheduleTimeout: Invalid value"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "needs scheduleTimeoutSeconds") {
		t.Fatalf("creating a job with onScheduleTimeout and no scheduleTimeoutSeconds: %v; want %q", err, want)
	}
}
