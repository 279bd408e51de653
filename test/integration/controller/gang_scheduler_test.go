package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The gang tests below run Kubernetes' own kube-scheduler with native gang scheduling
// (scheduling.k8s.io PodGroups, v1beta1 from Kubernetes 1.37, and their feature gates)
// and no kubelet: the test creates Node objects with GPUs, keeps their leases fresh,
// and plays the kubelet of the pods the scheduler binds.

// poolLabel keeps each subtest's pods on its own nodes: the jobs select it, and each
// subtest's nodes carry their own value.
const poolLabel = "test.tfk8s.io/pool"

// schedCluster is a control plane with kube-scheduler and native gang scheduling, with
// the tfk8s controller running on it.
type schedCluster struct {
	c       client.Client
	kubelet testutil.Kubelet
}

// startSchedCluster starts the control plane, the scheduler and the controller (native
// gang scheduling for every job), all stopped when the test ends.
func startSchedCluster(t *testing.T) *schedCluster {
	t.Helper()
	cp, err := controlplane.Start(context.Background(), controlplane.Options{Scheduler: true, GangScheduling: true})
	if errors.Is(err, controlplane.ErrNoGangScheduling) {
		t.Skipf("skipped: %v", err)
	}
	if err != nil {
		t.Fatalf("starting a control plane with kube-scheduler and gang scheduling: %v", err)
	}
	t.Cleanup(cp.Stop)
	c := newGangClient(t, cp.Config)
	startControllerWith(t, *cp.Config, controller.Options{RetryBackoff: 200 * time.Millisecond, PodOptions: controller.PodOptions{
		Gang: controller.GangOptions{DefaultProvider: tfv1.GangProviderNative},
	}})
	return &schedCluster{c: c, kubelet: testutil.Kubelet{Client: c}}
}

// addNode adds a Ready node of the pool with 8 CPUs and the given GPUs, and renews its
// lease until the test ends, as a kubelet would, so that the node lifecycle controller
// never taints it unreachable. The node is deleted when the test ends.
func (sc *schedCluster) addNode(t *testing.T, name, pool string, gpus int64) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, poolLabel: pool}}}
	if err := sc.c.Create(ctx, node); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = sc.c.Delete(context.Background(), node) })
	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), tfjob.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI),
	}
	// The node lifecycle controller taints the new node not-ready meanwhile: retried.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := sc.c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status = corev1.NodeStatus{Capacity: resources, Allocatable: resources, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}}
		return sc.c.Status().Update(ctx, node)
	})
	if err != nil {
		t.Fatalf("marking node %s Ready: %v", name, err)
	}
	testutil.Eventually(t, "node "+name+" untainted", func(ctx context.Context) (bool, error) {
		err := sc.c.Get(ctx, client.ObjectKeyFromObject(node), node)
		return err == nil && len(node.Spec.Taints) == 0, err
	})
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	if err := sc.c.Create(ctx, lease); err != nil {
		t.Fatalf("creating the lease of node %s: %v", name, err)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	t.Cleanup(func() { close(done); <-stopped; _ = sc.c.Delete(context.Background(), lease) })
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
				_ = sc.c.Update(context.Background(), lease)
			}
		}
	}()
}

// makeGPUJob is a job of workers asking for gpus GPUs and 100m CPU each, on the pool's
// nodes, with the given scheduling policy.
func makeGPUJob(name, ns, pool string, workers int32, gpus int64, sp *tfv1.SchedulingPolicy) *tfv1.TFJob {
	job := testutil.MakeTFJob(name, ns).Workers(workers).Obj()
	spec := &job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec
	spec.NodeSelector = map[string]string{poolLabel: pool}
	spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{tfjob.GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)},
	}
	job.Spec.RunPolicy.SchedulingPolicy = sp
	return job
}

// gangState is what the scheduler did with a job's pods: how many there are, which
// are bound (pod: node), and the scheduler's verdict on each unbound one.
type gangState struct {
	pods, bound int
	nodes       map[string]string
	verdicts    map[string]string
}

// seenUnschedulable reports whether every pod of the job exists, none is bound, and
// the scheduler has written its verdict on each.
func (g gangState) seenUnschedulable(want int) bool {
	return g.pods == want && g.bound == 0 && len(g.verdicts) == want
}

// gang reads the state of the job's pods.
func (sc *schedCluster) gang(ctx context.Context, ns, job string) (gangState, error) {
	list := &corev1.PodList{}
	if err := sc.c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
		return gangState{}, err
	}
	g := gangState{nodes: map[string]string{}, verdicts: map[string]string{}}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		g.pods++
		if p.Spec.NodeName != "" {
			g.bound++
			g.nodes[p.Name] = p.Spec.NodeName
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				g.verdicts[p.Name] = c.Reason + ": " + c.Message
			}
		}
	}
	return g, nil
}

// waitGang waits until the job's pods satisfy ok, and returns their state.
func (sc *schedCluster) waitGang(t *testing.T, ns, job, what string, ok func(gangState) bool) gangState {
	t.Helper()
	var g gangState
	testutil.Eventually(t, job+": "+what, func(ctx context.Context) (bool, error) {
		var err error
		g, err = sc.gang(ctx, ns, job)
		return err == nil && ok(g), err
	})
	return g
}

// logVerdicts prints the scheduler's verdict on each unbound pod, in name order.
func logVerdicts(t *testing.T, g gangState) {
	t.Helper()
	names := make([]string, 0, len(g.verdicts))
	for n := range g.verdicts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("  %s unbound: %s", n, g.verdicts[n])
	}
}

// TestGangWithScheduler checks native gang scheduling end to end with the real
// kube-scheduler: all of a gang's pods are bound or none, two gangs competing for one
// node never deadlock, and scheduleTimeoutSeconds fails or suspends a gang that cannot
// fit with the scheduler's own reason.
func TestGangWithScheduler(t *testing.T) {
	sc := startSchedCluster(t)
	t.Run("a gang that does not fit binds no pod until a node is added", func(t *testing.T) { testGangWaitsForCapacity(t, sc) })
	t.Run("two gangs that fit one at a time run one after the other", func(t *testing.T) { testGangsTakeTurns(t, sc) })
	t.Run("GPU replicas pack onto one node", func(t *testing.T) { testGPUReplicasPack(t, sc) })
	t.Run("a worker preempted by the scheduler is a disruption", func(t *testing.T) { testPreemptionIsADisruption(t, sc) })
	t.Run("scheduleTimeoutSeconds fails a gang that cannot fit", func(t *testing.T) {
		testGangTimeout(t, sc, tfv1.ScheduleTimeoutFail)
	})
	t.Run("scheduleTimeoutSeconds suspends a gang that cannot fit", func(t *testing.T) {
		testGangTimeout(t, sc, tfv1.ScheduleTimeoutSuspend)
	})
}

// testGangWaitsForCapacity: 3 workers of 1 GPU on a node of 2 GPUs. The scheduler says
// of every pod why it is not placed, and binds none (the default scheduler alone would
// bind two, holding their GPUs for nothing); a second node lets all three bind.
func testGangWaitsForCapacity(t *testing.T, sc *schedCluster) {
	ns := testutil.Namespace(t, sc.c)
	sc.addNode(t, "wait-a", "wait", 2)
	job := makeGPUJob("big", ns, "wait", 3, 1, nil)
	if err := sc.c.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	g := sc.waitGang(t, ns, job.Name, "3 pods, none bound, each with the scheduler's verdict",
		func(g gangState) bool { return g.seenUnschedulable(3) || g.bound > 0 })
	if g.bound > 0 {
		t.Fatalf("%d of the gang's 3 pods bound to a node that fits 2: %v", g.bound, g.nodes)
	}
	t.Logf("3 pods of 1 GPU, one node of 2 GPUs: 0 bound")
	logVerdicts(t, g)

	sc.addNode(t, "wait-b", "wait", 2)
	g = sc.waitGang(t, ns, job.Name, "all 3 pods bound", func(g gangState) bool { return g.bound == 3 })
	t.Logf("a second node of 2 GPUs added: all bound: %v", g.nodes)
}

// testGangsTakeTurns: two jobs of 2 workers of 2 GPUs on one node of 4 GPUs, created
// together. Pod by pod, each could take half the node and wait forever for the rest;
// as gangs, one is bound whole and the other not at all, and it is bound once the first
// has finished.
func testGangsTakeTurns(t *testing.T, sc *schedCluster) {
	ctx := context.Background()
	ns := testutil.Namespace(t, sc.c)
	sc.addNode(t, "turns-a", "turns", 4)
	for _, name := range []string{"first", "second"} {
		if err := sc.c.Create(ctx, makeGPUJob(name, ns, "turns", 2, 2, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var winner, loser string
	var states map[string]gangState
	testutil.Eventually(t, "one gang bound whole, the other unbound with the scheduler's verdicts", func(ctx context.Context) (bool, error) {
		states = map[string]gangState{}
		for _, name := range []string{"first", "second"} {
			g, err := sc.gang(ctx, ns, name)
			if err != nil {
				return false, err
			}
			states[name] = g
		}
		f, s := states["first"], states["second"]
		if f.bound > 0 && f.bound < 2 && s.bound > 0 && s.bound < 2 {
			return false, fmt.Errorf("both gangs partially bound: %v, %v", f.nodes, s.nodes)
		}
		switch {
		case f.bound == 2 && s.seenUnschedulable(2):
			winner, loser = "first", "second"
		case s.bound == 2 && f.seenUnschedulable(2):
			winner, loser = "second", "first"
		}
		return winner != "", nil
	})
	t.Logf("%s bound whole %v; %s unbound:", winner, states[winner].nodes, loser)
	logVerdicts(t, states[loser])

	names := []string{winner + "-worker-0", winner + "-worker-1"}
	sc.kubelet.SetRunning(t, ns, names...)
	for _, n := range names {
		sc.kubelet.SetExited(t, ns, n, 0)
	}
	g := sc.waitGang(t, ns, loser, "bound whole once "+winner+" finished", func(g gangState) bool { return g.bound == 2 })
	t.Logf("%s finished; %s bound whole: %v", winner, loser, g.nodes)
}

// testGPUReplicasPack: 4 workers of 1 GPU on two empty nodes of 4 GPUs. The scheduler
// alone spreads them (it scores the least allocated node best); the preferred affinity
// the controller gives GPU replicas puts all four on one node, leaving the other whole.
func testGPUReplicasPack(t *testing.T, sc *schedCluster) {
	ns := testutil.Namespace(t, sc.c)
	sc.addNode(t, "pack-a", "pack", 4)
	sc.addNode(t, "pack-b", "pack", 4)
	job := makeGPUJob("packed", ns, "pack", 4, 1, nil)
	if err := sc.c.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	g := sc.waitGang(t, ns, job.Name, "all 4 pods bound", func(g gangState) bool { return g.bound == 4 })
	nodes := map[string]int{}
	for _, n := range g.nodes {
		nodes[n]++
	}
	if len(nodes) != 1 {
		t.Errorf("4 GPU replicas on 2 empty nodes of 4 GPUs spread over %v, want packed on one node", nodes)
	}
	t.Logf("4 workers of 1 GPU, 2 nodes of 4 GPUs: %v", nodes)
}

// testGangTimeout: 2 workers of 2 GPUs each on a node of 1 GPU never fit; after
// scheduleTimeoutSeconds the job fails (or is suspended, its pods deleted), with a
// condition that quotes the scheduler: Insufficient nvidia.com/gpu.
func testGangTimeout(t *testing.T, sc *schedCluster, action tfv1.ScheduleTimeoutAction) {
	ctx := context.Background()
	ns := testutil.Namespace(t, sc.c)
	pool := "timeout-" + strings.ToLower(string(action))
	sc.addNode(t, pool, pool, 1)
	job := makeGPUJob("cannot", ns, pool, 2, 2, &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](3), OnScheduleTimeout: action})
	if err := sc.c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	typ := tfv1.JobFailed
	if action == tfv1.ScheduleTimeoutSuspend {
		typ = tfv1.JobSuspended
	}
	var c struct{ Status, Reason, Message string }
	testutil.Eventually(t, "the job "+string(typ), func(ctx context.Context) (bool, error) {
		err := sc.c.Get(ctx, client.ObjectKeyFromObject(job), job)
		c = conditionOf(job, typ)
		return err == nil && c.Status == "True", err
	})
	if c.Reason != tfv1.ReasonGangScheduleTimeout || !strings.Contains(c.Message, "Insufficient nvidia.com/gpu") {
		t.Errorf("%s condition %s: %s\nwant reason %s and the scheduler's Insufficient nvidia.com/gpu", typ, c.Reason, c.Message, tfv1.ReasonGangScheduleTimeout)
	}
	t.Logf("%s %s: %s", typ, c.Reason, c.Message)
	if action == tfv1.ScheduleTimeoutSuspend {
		if !ptr.Deref(job.Spec.RunPolicy.Suspend, false) {
			t.Errorf("runPolicy.suspend = %v, want true", job.Spec.RunPolicy.Suspend)
		}
		sc.waitGang(t, ns, job.Name, "its pods deleted", func(g gangState) bool { return g.pods == 0 })
	}
}

// testPreemptionIsADisruption: a running worker of a job with backoffLimit 0 and
// restartPolicy Never holds the node's 2 GPUs when a pod of higher priority asks for
// them. The scheduler preempts the worker (DisruptionTarget, PreemptionByScheduler);
// the job does not fail: the worker is re-created, counted as a disruption, and waits
// for GPUs again.
func testPreemptionIsADisruption(t *testing.T, sc *schedCluster) {
	ctx := context.Background()
	ns := testutil.Namespace(t, sc.c)
	sc.addNode(t, "preempt-a", "preempt", 2)
	job := makeGPUJob("victim", ns, "preempt", 1, 2, nil)
	job.Spec.RunPolicy.BackoffLimit = ptr.To[int32](0)
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].RestartPolicy = tfv1.RestartPolicyNever
	if err := sc.c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	sc.waitGang(t, ns, job.Name, "bound", func(g gangState) bool { return g.bound == 1 })
	victim := &corev1.Pod{}
	if err := sc.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "victim-worker-0"}, victim); err != nil {
		t.Fatal(err)
	}
	sc.kubelet.SetRunning(t, ns, victim.Name)

	high := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "tfk8s-test-high"}, Value: 1000}
	if err := sc.c.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.c.Delete(context.Background(), high) })
	preemptor := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "urgent", Namespace: ns},
		Spec: corev1.PodSpec{PriorityClassName: high.Name, NodeSelector: map[string]string{poolLabel: "preempt"},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{tfjob.GPUResource: resource.MustParse("2")}}}}},
	}
	// The Priority admission plugin reads PriorityClasses from its informer, which may
	// not have seen the new one yet (TestGangWithScheduler failed so in CI).
	testutil.Eventually(t, "the preemptor created", func(ctx context.Context) (bool, error) {
		err := sc.c.Create(ctx, preemptor)
		return err == nil, err
	})
	// The scheduler marks the victim and deletes it gracefully; the kubelet would then
	// stop its container and confirm.
	finishTermination(t, sc.c, ns, victim.Name)

	testutil.Eventually(t, "the worker re-created, one disruption counted", func(ctx context.Context) (bool, error) {
		pod := &corev1.Pod{}
		if err := sc.c.Get(ctx, client.ObjectKeyFromObject(victim), pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if err := sc.c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, err
		}
		return pod.UID != victim.UID && replicaStatus(job, tfv1.ReplicaTypeWorker).Disruptions == 1, nil
	})
	if c := conditionOf(job, tfv1.JobFailed); c.Status == "True" {
		t.Fatalf("job failed after a preemption: %s: %s", c.Reason, c.Message)
	}
	if rs := replicaStatus(job, tfv1.ReplicaTypeWorker); rs.Restarts != 0 {
		t.Errorf("worker restarts %d after a preemption, want 0", rs.Restarts)
	}
	c := conditionOf(job, tfv1.JobRestarting)
	t.Logf("worker status %+v; Restarting %s %s: %s", replicaStatus(job, tfv1.ReplicaTypeWorker), c.Status, c.Reason, c.Message)
	// Events are written after the status, asynchronously.
	var notes []string
	testutil.Eventually(t, "a Disrupted event", func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		err := sc.c.List(ctx, events, client.InNamespace(ns))
		notes = nil
		for _, e := range events.Items {
			if e.Reason == tfv1.ReasonDisrupted {
				notes = append(notes, e.Note)
			}
		}
		return err == nil && len(notes) > 0, err
	})
	if len(notes) != 1 || !strings.Contains(notes[0], "victim-worker-0 was disrupted (PreemptionByScheduler)") {
		t.Errorf("Disrupted events %q, want one naming victim-worker-0 and PreemptionByScheduler", notes)
	}
	t.Logf("events: %q", notes)
}
