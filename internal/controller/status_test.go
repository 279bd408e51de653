package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// now is the clock of every status test.
var now = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// worker is a pod of worker index of job "j" in namespace "ml".
func worker(index int32) *testutil.PodWrapper {
	return testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, index)
}

// observed is what a user sees of one observation of a two-worker job: the workers'
// status, the pods whose outcome is recorded, the pods deleted to be re-created and the
// pods released, and what was counted.
type observed struct {
	Worker       tfv1.ReplicaStatus
	RecordedPods []types.UID
	Retry        []string
	Release      []string
	Restarted    int32
	Failures     []tfv1.ReplicaFailure
	Disrupted    []string
}

func summarize(o *observation) observed {
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	var failures []tfv1.ReplicaFailure
	for _, f := range o.failures {
		failures = append(failures, *f.failure)
	}
	return observed{
		Worker:       *o.status.ReplicaStatuses[tfv1.ReplicaTypeWorker],
		RecordedPods: o.status.RecordedPods,
		Retry:        names(o.retry),
		Release:      names(o.release),
		Restarted:    o.restarted,
		Failures:     failures,
		Disrupted:    names(o.disrupted),
	}
}

// TestObserve checks how the outcome of every pod is counted into the job's status:
// once, while the pod carries the tracking finalizer, according to the replica's
// restart policy.
// markSucceeded sets a job's status to Succeeded.
func markSucceeded(st *tfv1.TFJobStatus) {
	st.Conditions = []metav1.Condition{{Type: string(tfv1.JobSucceeded), Status: metav1.ConditionTrue, Reason: tfv1.ReasonSucceeded}}
}

// workerFailure is the failure recorded for worker index of job j.
func workerFailure(index int32, code int32, reason string) tfv1.ReplicaFailure {
	return tfv1.ReplicaFailure{Index: index, Pod: tfjob.PodName("j", tfv1.ReplicaTypeWorker, index), ExitCode: code, Reason: reason, Time: now}
}

// podDeletedFailure is the failure of j's worker 0 deleted while running under Never.
var podDeletedFailure = tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: -1, Reason: "PodDeleted",
	Message: "the pod was deleted while running and restartPolicy is Never", Time: now}

// observeCase is one job status and its pods, and what observe makes of them.
type observeCase struct {
	name    string
	policy  tfv1.RestartPolicy
	suspend bool
	status  tfv1.TFJobStatus
	pods    []*corev1.Pod
	want    observed
}

// checkObservations runs observe on each case's job (two workers, the case's restart
// policy) and pods, and wants its observation, with the job left unchanged.
func checkObservations(t *testing.T, cases []observeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tc.policy).Suspend(tc.suspend).Obj()
			job.Status = tc.status
			before := job.DeepCopy()
			got := summarize(observePods(job, tc.pods, now))
			// An empty recordedPods is written as none: nil and empty are the same.
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("observation (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, job); diff != "" {
				t.Errorf("observe changed the job (-before +after):\n%s", diff)
			}
		})
	}
}

func TestObserve(t *testing.T) {
	checkObservations(t, []observeCase{
		{
			name: "succeeded pod is recorded and released",
			pods: []*corev1.Pod{worker(0).Phase(corev1.PodSucceeded).ExitCode(0).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Succeeded: 1, SucceededIndexes: "0"},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			name:   "a finished job counts nothing more, but still releases pods",
			policy: tfv1.RestartPolicyNever,
			status: func() tfv1.TFJobStatus {
				st := tfv1.TFJobStatus{ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
					tfv1.ReplicaTypeWorker: {Active: 2, Succeeded: 1, SucceededIndexes: "0"}}}
				markSucceeded(&st)
				return st
			}(),
			pods: []*corev1.Pod{
				worker(0).Phase(corev1.PodRunning).RestartCount(4).Deleting().Finalizer().Obj(),
				worker(1).Phase(corev1.PodFailed).ExitCode(1).Finalizer().Obj(),
			},
			want: observed{
				Worker:  tfv1.ReplicaStatus{Succeeded: 1, SucceededIndexes: "0"},
				Release: []string{"j-worker-0", "j-worker-1"},
			},
		},
		{
			name:   "restarts count the container restarts of live pods",
			policy: tfv1.RestartPolicyOnFailure,
			status: tfv1.TFJobStatus{ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
				tfv1.ReplicaTypeWorker: {Restarts: 2, RestartsOfGonePods: 2}}},
			pods: []*corev1.Pod{
				worker(0).Phase(corev1.PodRunning).RestartCount(3).Finalizer().Obj(),
				worker(1).Phase(corev1.PodPending).RestartCount(1).Finalizer().Obj(),
			},
			want: observed{Worker: tfv1.ReplicaStatus{Active: 2, Restarts: 6, RestartsOfGonePods: 2}},
		},
		{
			name: "a pod of an index beyond the spec is released, not counted",
			pods: []*corev1.Pod{worker(5).Phase(corev1.PodSucceeded).ExitCode(0).Finalizer().Obj()},
			want: observed{Release: []string{"j-worker-5"}},
		},
	})
}

// TestObserveRecordedPods: a pod is counted once, by its UID, while it carries the finalizer.
func TestObserveRecordedPods(t *testing.T) {
	checkObservations(t, []observeCase{
		{
			name: "succeeded pod already recorded is not counted twice",
			status: tfv1.TFJobStatus{
				ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {
					Succeeded: 1, SucceededIndexes: "0", Restarts: 1, RestartsOfGonePods: 1}},
				RecordedPods: []types.UID{"j-worker-0-uid"},
			},
			pods: []*corev1.Pod{worker(0).Phase(corev1.PodSucceeded).ExitCode(0).RestartCount(1).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Succeeded: 1, SucceededIndexes: "0", Restarts: 1, RestartsOfGonePods: 1},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			name:   "a re-created pod is counted afresh; the old pod's UID is forgotten",
			policy: tfv1.RestartPolicyExitCode,
			status: tfv1.TFJobStatus{
				ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {Restarts: 1, RestartsOfGonePods: 1}},
				RecordedPods:    []types.UID{"j-worker-0-uid"},
			},
			pods: []*corev1.Pod{worker(0).UID("j-worker-0-second").Phase(corev1.PodRunning).Finalizer().Obj()},
			want: observed{Worker: tfv1.ReplicaStatus{Active: 1, Restarts: 1, RestartsOfGonePods: 1}},
		},
		{
			name: "recordedPods keeps only the pods that still carry the finalizer",
			status: tfv1.TFJobStatus{
				ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {Succeeded: 2, SucceededIndexes: "0-1"}},
				RecordedPods:    []types.UID{"j-worker-0-uid", "j-worker-1-uid", "long-gone-uid"},
			},
			pods: []*corev1.Pod{
				worker(0).Phase(corev1.PodSucceeded).ExitCode(0).Obj(),
				worker(1).Phase(corev1.PodSucceeded).ExitCode(0).Finalizer().Obj(),
			},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Succeeded: 2, SucceededIndexes: "0-1"},
				RecordedPods: []types.UID{"j-worker-1-uid"},
				Release:      []string{"j-worker-1"},
			},
		},
		{
			name: "a pod without the finalizer is not counted",
			pods: []*corev1.Pod{worker(0).Phase(corev1.PodSucceeded).ExitCode(0).Obj()},
			want: observed{},
		},
	})
}

// TestObserveFailures: failed, deleted and disrupted pods under ExitCode and OnFailure.
func TestObserveFailures(t *testing.T) {
	checkObservations(t, []observeCase{
		{
			name:   "ExitCode: killed by SIGKILL (137) is retried",
			policy: tfv1.RestartPolicyExitCode,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(137).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Restarts: 1, RestartsOfGonePods: 1, LastFailure: ptr.To(workerFailure(0, 137, "Error"))},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Retry:        []string{"j-worker-0"},
				Release:      []string{"j-worker-0"},
				Restarted:    1,
			},
		},
		{
			name:   "ExitCode: exit 1 fails the replica for good",
			policy: tfv1.RestartPolicyExitCode,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(1).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Failed: 1, FailedIndexes: "0", LastFailure: ptr.To(workerFailure(0, 1, "Error"))},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Failures:     []tfv1.ReplicaFailure{workerFailure(0, 1, "Error")},
			},
		},
		{
			name:   "ExitCode: a disruption is re-created whatever the exit code, and is no restart",
			policy: tfv1.RestartPolicyExitCode,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(1).Condition(corev1.DisruptionTarget).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Disruptions: 1, LastFailure: ptr.To(workerFailure(0, 1, "Error"))},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Retry:        []string{"j-worker-0"},
				Release:      []string{"j-worker-0"},
				Disrupted:    []string{"j-worker-0"},
			},
		},
		{
			name:   "OnFailure: an evicted pod is re-created; only its container restarts count as restarts",
			policy: tfv1.RestartPolicyOnFailure,
			pods:   []*corev1.Pod{worker(1).Phase(corev1.PodFailed).Reason("Evicted").ExitCode(1).RestartCount(2).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Restarts: 2, RestartsOfGonePods: 2, Disruptions: 1, LastFailure: ptr.To(workerFailure(1, 1, "Evicted"))},
				RecordedPods: []types.UID{"j-worker-1-uid"},
				Retry:        []string{"j-worker-1"},
				Release:      []string{"j-worker-1"},
				Disrupted:    []string{"j-worker-1"},
			},
		},
		{
			name:   "a failed pod already recorded is deleted again, not counted again",
			policy: tfv1.RestartPolicyExitCode,
			status: tfv1.TFJobStatus{
				ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {Restarts: 1, RestartsOfGonePods: 1}},
				RecordedPods:    []types.UID{"j-worker-0-uid"},
			},
			pods: []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(137).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Restarts: 1, RestartsOfGonePods: 1},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Retry:        []string{"j-worker-0"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			name:   "OnFailure: a running pod deleted from outside is a restart",
			policy: tfv1.RestartPolicyOnFailure,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodRunning).RestartCount(1).Deleting().Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Restarts: 2, RestartsOfGonePods: 2},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Restarted:    1,
			},
		},
	})
}

// TestObserveFailuresUnderNever: under restartPolicy Never a failure is final, a disruption is not.
func TestObserveFailuresUnderNever(t *testing.T) {
	checkObservations(t, []observeCase{
		{
			name:   "Never: a running pod preempted (DisruptionTarget, deleting) is a disruption",
			policy: tfv1.RestartPolicyNever,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodRunning).Condition(corev1.DisruptionTarget).Deleting().Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Disruptions: 1},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Disrupted:    []string{"j-worker-0"},
			},
		},
		{
			name:   "Never: a pending pod deleted before binding is a disruption",
			policy: tfv1.RestartPolicyNever,
			pods:   []*corev1.Pod{worker(0).Deleting().Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Disruptions: 1},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Disrupted:    []string{"j-worker-0"},
			},
		},
		{
			name:   "Never: even a SIGKILL fails the replica for good",
			policy: tfv1.RestartPolicyNever,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(137).Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Failed: 1, FailedIndexes: "0", LastFailure: ptr.To(workerFailure(0, 137, "Error"))},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Failures:     []tfv1.ReplicaFailure{workerFailure(0, 137, "Error")},
			},
		},
		{
			name:   "Never: a running pod deleted from outside fails the replica",
			policy: tfv1.RestartPolicyNever,
			pods:   []*corev1.Pod{worker(0).Phase(corev1.PodRunning).Deleting().Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Failed: 1, FailedIndexes: "0", LastFailure: &podDeletedFailure},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
				Failures:     []tfv1.ReplicaFailure{podDeletedFailure},
			},
		},
	})
}

// TestObserveSuspended: pods deleted for a suspension are neither failures nor restarts.
func TestObserveSuspended(t *testing.T) {
	checkObservations(t, []observeCase{
		{
			name:    "Never: a running pod deleted while the job is suspended is not counted",
			policy:  tfv1.RestartPolicyNever,
			suspend: true,
			pods:    []*corev1.Pod{worker(0).Phase(corev1.PodRunning).Deleting().Finalizer().Obj()},
			want: observed{
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			// status.replicaStatuses[].restartsOfGonePods holds "the container restarts of
			// pods since deleted": suspending must not wipe them (nor reset backoffLimit).
			name:    "OnFailure: a pod deleted while the job is suspended keeps its container restarts, adds none",
			policy:  tfv1.RestartPolicyOnFailure,
			suspend: true,
			pods:    []*corev1.Pod{worker(0).Phase(corev1.PodRunning).RestartCount(2).Deleting().Finalizer().Obj()},
			want: observed{
				Worker:       tfv1.ReplicaStatus{Restarts: 2, RestartsOfGonePods: 2},
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			// Suspension deletes the pod; its program gets SIGTERM and exits 143 before
			// tfk8s sees the pod again (or the controller restarted meanwhile). The pod
			// was deleted while active, as in the case above, and must not fail the job.
			name:    "Never: a pod that failed after its deletion for a suspension is not counted",
			policy:  tfv1.RestartPolicyNever,
			suspend: true,
			pods:    []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(143).Deleting().Finalizer().Obj()},
			want: observed{
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
		{
			name:    "ExitCode: a pod that failed after its deletion for a suspension is not a restart",
			policy:  tfv1.RestartPolicyExitCode,
			suspend: true,
			pods:    []*corev1.Pod{worker(0).Phase(corev1.PodFailed).ExitCode(143).Deleting().Finalizer().Obj()},
			want: observed{
				RecordedPods: []types.UID{"j-worker-0-uid"},
				Release:      []string{"j-worker-0"},
			},
		},
	})
}

func TestObserveLiveContainerFailure(t *testing.T) {
	at := func(min int) metav1.Time { return metav1.NewTime(now.Add(time.Duration(min) * time.Minute)) }
	restarted := func(finished metav1.Time) *corev1.Pod {
		pod := worker(1).Phase(corev1.PodRunning).RestartCount(1).Finalizer().Obj()
		pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "OOMKilled", FinishedAt: finished}}
		pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		return pod
	}
	older := &tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 1, Reason: "Error", Time: at(-10)}
	newer := &tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 1, Reason: "Error", Time: at(10)}
	cases := []struct {
		name        string
		last        *tfv1.ReplicaFailure
		finished    *metav1.Time
		restartedAt metav1.Time
		want        *tfv1.ReplicaFailure
	}{
		{name: "no failure yet", want: &tfv1.ReplicaFailure{Index: 1, Pod: "j-worker-1", ExitCode: 137, Reason: "OOMKilled", Time: at(-1)}},
		{name: "newer than the recorded one", last: older,
			want: &tfv1.ReplicaFailure{Index: 1, Pod: "j-worker-1", ExitCode: 137, Reason: "OOMKilled", Time: at(-1)}},
		{name: "older than the recorded one", last: newer, want: newer},
		{name: "no finish time: when the container started again", finished: &metav1.Time{}, restartedAt: at(-2),
			want: &tfv1.ReplicaFailure{Index: 1, Pod: "j-worker-1", ExitCode: 137, Reason: "OOMKilled", Time: at(-2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyOnFailure).Obj()
			job.Status.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {LastFailure: tc.last}}
			pod := restarted(at(-1))
			if tc.finished != nil {
				pod = restarted(*tc.finished)
				pod.Status.ContainerStatuses[0].State.Running.StartedAt = tc.restartedAt
			}
			got := observePods(job, []*corev1.Pod{pod}, now).status.ReplicaStatuses[tfv1.ReplicaTypeWorker]
			if diff := cmp.Diff(tc.want, got.LastFailure); diff != "" {
				t.Errorf("lastFailure (-want +got):\n%s", diff)
			}
			if got.Restarts != 1 {
				t.Errorf("restarts = %d, want 1", got.Restarts)
			}
		})
	}
}
