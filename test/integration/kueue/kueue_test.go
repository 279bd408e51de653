package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/kueueproc"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// A TFJob in a Kueue queue is admitted as one Workload that asks quota for every
// replica, gets no pod before, runs on the admitted flavor's nodes, and finishes its
// Workload when it ends, which gives the quota back.
func TestKueueAdmitsAJobAsOneWorkload(t *testing.T) {
	printKueueLogOnFailure(t)
	ns := testutil.Namespace(t, k8sClient)
	setupQueue(t, ns, 4)
	start := time.Now()
	if err := k8sClient.Create(context.Background(), queuedJob(ns, "a", "")); err != nil {
		t.Fatal(err)
	}

	var wl *unstructured.Unstructured
	testutil.Eventually(t, "the Workload of a to be admitted", func(ctx context.Context) (bool, error) {
		var err error
		wl, err = getWorkload(ctx, ns, "a")
		return err == nil && kueueproc.ConditionTrue(wl, "Admitted"), err
	})
	t.Logf("admitted %s after the job was created", since(start))
	podSets, _, _ := unstructured.NestedSlice(wl.Object, "spec", "podSets")
	var got []string
	for _, ps := range podSets {
		m := ps.(map[string]any)
		got = append(got, fmt.Sprintf("%s×%v", m["name"], m["count"]))
	}
	if diff := cmp.Diff([]string{"ps×1", "worker×2"}, got); diff != "" {
		t.Errorf("pod sets of the Workload (-want +got):\n%s", diff)
	}
	if q, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName"); q != "q" {
		t.Errorf("Workload queue = %q, want q", q)
	}

	for _, pod := range runJob(t, ns, "a") {
		if got := pod.Spec.NodeSelector["tfk8s.io/test-flavor"]; got != ns {
			t.Errorf("pod %s node selector tfk8s.io/test-flavor = %q, want the flavor's %q", pod.Name, got, ns)
		}
	}
	finishJob(t, ns, "a")
	testutil.Eventually(t, "the Workload of a to be finished", func(ctx context.Context) (bool, error) {
		wl, err := getWorkload(ctx, ns, "a")
		return err == nil && kueueproc.ConditionTrue(wl, "Finished"), err
	})
}

// A job that does not fit the quota left stays queued, with no pod at all, until the
// job that holds the quota finishes; then it runs.
func TestKueueQueuesAJobThatDoesNotFit(t *testing.T) {
	printKueueLogOnFailure(t)
	ns := testutil.Namespace(t, k8sClient)
	setupQueue(t, ns, 4)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, queuedJob(ns, "a", "")); err != nil {
		t.Fatal(err)
	}
	runJob(t, ns, "a")

	if err := k8sClient.Create(ctx, queuedJob(ns, "b", "")); err != nil {
		t.Fatal(err)
	}
	// Kueue said why b waits: its message is in b's condition.
	b := waitJob(t, ns, "b", "to be queued for want of quota", func(job *tfv1.TFJob) bool {
		return held(tfv1.ReasonQueued)(job) && strings.Contains(suspendedMessage(job), "insufficient")
	})
	t.Logf("b: %s", suspendedMessage(b))
	if pods, err := jobPods(ctx, ns, "b"); err != nil || len(pods) != 0 {
		t.Fatalf("queued job b has %d pods (err %v), want none", len(pods), err)
	}

	finished := time.Now()
	finishJob(t, ns, "a")
	runJob(t, ns, "b")
	t.Logf("b running %s after a finished", since(finished))
	finishJob(t, ns, "b")
}

// A job of higher priority preempts a running one of lower priority: the low job's
// pods are deleted, it says it was preempted, and it runs again, to success, once the
// high one is done, without spending its backoffLimit of 0.
func TestKueuePreemptsALowerPriorityJob(t *testing.T) {
	printKueueLogOnFailure(t)
	ns := testutil.Namespace(t, k8sClient)
	setupQueue(t, ns, 4)
	createKueueObjects(t,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: WorkloadPriorityClass, metadata: {name: `+ns+`-low}, value: 10}`,
		`{apiVersion: kueue.x-k8s.io/v1beta2, kind: WorkloadPriorityClass, metadata: {name: `+ns+`-high}, value: 1000}`)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, queuedJob(ns, "low", ns+"-low")); err != nil {
		t.Fatal(err)
	}
	runJob(t, ns, "low")

	start := time.Now()
	if err := k8sClient.Create(ctx, queuedJob(ns, "high", ns+"-high")); err != nil {
		t.Fatal(err)
	}
	// Held as Preempted lasts only until the evicted Workload's quota is given back,
	// which can fall between two polls; then the job waits as Queued. Either hold, with
	// the Preempted event the user sees in describe, says low was preempted.
	waitJob(t, ns, "low", "to be preempted", func(j *tfv1.TFJob) bool {
		return held(tfv1.ReasonPreempted)(j) || held(tfv1.ReasonQueued)(j)
	})
	t.Logf("low preempted %s after high was created: %s", since(start), waitEvent(t, ns, "low", tfv1.ReasonPreempted))
	testutil.Eventually(t, "the pods of low to be deleted", func(ctx context.Context) (bool, error) {
		pods, err := jobPods(ctx, ns, "low")
		return len(pods) == 0, err
	})
	runJob(t, ns, "high")
	t.Logf("high running %s after it was created", since(start))
	waitJob(t, ns, "low", "to wait in the queue again", held(tfv1.ReasonQueued))

	finishJob(t, ns, "high")
	runJob(t, ns, "low")
	low := finishJob(t, ns, "low")
	for rt, rs := range low.Status.ReplicaStatuses {
		if rs.Restarts != 0 {
			t.Errorf("%s restarts = %d after the preemption, want 0 (backoffLimit 0 would fail the job)", rt, rs.Restarts)
		}
	}
}

// suspendedMessage is the message of the job's Suspended condition.
func suspendedMessage(job *tfv1.TFJob) string {
	for _, c := range job.Status.Conditions {
		if c.Type == string(tfv1.JobSuspended) {
			return c.Message
		}
	}
	return ""
}

// A job Kueue admitted whose pods find no node within scheduleTimeoutSeconds, under
// onScheduleTimeout: Suspend, is suspended: its pods are deleted and its quota given
// back, which admits the job queued behind it; resumed, it waits in its queue again and
// runs once the quota is free.
func TestKueueJobSuspendedOnScheduleTimeout(t *testing.T) {
	printKueueLogOnFailure(t)
	ns := testutil.Namespace(t, k8sClient)
	setupQueue(t, ns, 4)
	ctx := context.Background()
	stuck := queuedJob(ns, "stuck", "")
	stuck.Spec.RunPolicy.SchedulingPolicy = &tfv1.SchedulingPolicy{
		ScheduleTimeoutSeconds: ptr.To[int32](2), OnScheduleTimeout: tfv1.ScheduleTimeoutSuspend,
	}
	if err := k8sClient.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the 3 pods of stuck, bound to no node", func(ctx context.Context) (bool, error) {
		pods, err := jobPods(ctx, ns, "stuck")
		return len(pods) == 3, err
	})
	if err := k8sClient.Create(ctx, queuedJob(ns, "next", "")); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	s := waitJob(t, ns, "stuck", "to be suspended for its schedule timeout", held(tfv1.ReasonGangScheduleTimeout))
	t.Logf("stuck suspended %s after next was created: %s", since(start), suspendedMessage(s))
	runJob(t, ns, "next")
	t.Logf("next running %s after it was created", since(start))
	if pods, err := jobPods(ctx, ns, "stuck"); err != nil || len(pods) != 0 {
		t.Errorf("suspended job stuck has %d pods (err %v), want none", len(pods), err)
	}
	if wl, err := getWorkload(ctx, ns, "stuck"); err != nil || kueueproc.ConditionTrue(wl, "QuotaReserved") {
		t.Errorf("the Workload of the suspended job stuck still holds quota (err %v)", err)
	}

	// Resumed, with time enough for this test to play the scheduler, it waits for next's
	// quota, then runs.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		job := &tfv1.TFJob{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stuck"}, job); err != nil {
			return err
		}
		job.Spec.RunPolicy.Suspend = nil
		job.Spec.RunPolicy.SchedulingPolicy.ScheduleTimeoutSeconds = ptr.To[int32](600)
		return k8sClient.Update(ctx, job)
	})
	if err != nil {
		t.Fatalf("resuming stuck: %v", err)
	}
	waitJob(t, ns, "stuck", "to wait in the queue again", func(job *tfv1.TFJob) bool {
		return held(tfv1.ReasonQueued)(job) && strings.Contains(suspendedMessage(job), "insufficient")
	})
	finishJob(t, ns, "next")
	runJob(t, ns, "stuck")
	finishJob(t, ns, "stuck")
}

// waitEvent waits for an event of reason on the object name and returns its note.
func waitEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	var note string
	testutil.Eventually(t, "a "+reason+" event of "+name, func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		err := k8sClient.List(ctx, events, client.InNamespace(ns))
		for _, e := range events.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				note = e.Note
			}
		}
		return err == nil && note != "", err
	})
	return note
}
