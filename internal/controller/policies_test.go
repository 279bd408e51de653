package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// Tests of the small policy files: success_policy.go, cleanup_policy.go, ttl_policy.go,
// deadline_policy.go and startup_policy.go.

// verdict is a policy's answer and the reason it gives.
type verdict struct {
	Met     bool
	Message string
}

// TestSuccessPolicyMet checks when a job has succeeded: its chief or master, else
// worker 0, by default; every worker, and the chief or master, under AllWorkers.
func TestSuccessPolicyMet(t *testing.T) {
	done := func(idx map[tfv1.ReplicaType]string) *tfv1.TFJobStatus {
		st := &tfv1.TFJobStatus{ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{}}
		for rt, s := range idx {
			st.ReplicaStatuses[rt] = &tfv1.ReplicaStatus{SucceededIndexes: s}
		}
		return st
	}
	chiefJob := testutil.MakeTFJob("j", "ml").Chief().PS(2).Workers(3).Obj()
	workerJob := testutil.MakeTFJob("j", "ml").PS(2).Workers(3).Obj()
	allWorkers := testutil.MakeTFJob("j", "ml").PS(2).Workers(3).SuccessPolicy(tfv1.SuccessPolicyAllWorkers).Obj()
	allWithChief := testutil.MakeTFJob("j", "ml").Chief().Workers(2).SuccessPolicy(tfv1.SuccessPolicyAllWorkers).Obj()
	cases := []struct {
		name   string
		job    *tfv1.TFJob
		status *tfv1.TFJobStatus
		want   verdict
	}{
		{name: "chief succeeded", job: chiefJob, status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeChief: "0"}),
			want: verdict{true, "TFJob ml/j succeeded: its chief succeeded"}},
		{name: "with a chief, workers do not decide", job: chiefJob,
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "0-2", tfv1.ReplicaTypePS: "0-1"})},
		{name: "master succeeded", job: testutil.MakeTFJob("j", "ml").Master().Workers(2).Obj(),
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeMaster: "0"}),
			want:   verdict{true, "TFJob ml/j succeeded: its master succeeded"}},
		{name: "no chief: worker 0 succeeded", job: workerJob, status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "0"}),
			want: verdict{true, "TFJob ml/j succeeded: worker 0 succeeded"}},
		{name: "no chief: other workers do not decide", job: workerJob,
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "1-2"})},
		{name: "nothing succeeded yet", job: workerJob, status: &tfv1.TFJobStatus{}},
		{name: "AllWorkers: two of three", job: allWorkers, status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "0,2"})},
		{name: "AllWorkers: all three", job: allWorkers, status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "0-2"}),
			want: verdict{true, "TFJob ml/j succeeded: all 3 workers succeeded"}},
		{name: "AllWorkers: workers done, chief not", job: allWithChief,
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeWorker: "0-1"})},
		{name: "AllWorkers: chief done, a worker not", job: allWithChief,
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeChief: "0", tfv1.ReplicaTypeWorker: "1"})},
		{name: "AllWorkers: chief and workers done", job: allWithChief,
			status: done(map[tfv1.ReplicaType]string{tfv1.ReplicaTypeChief: "0", tfv1.ReplicaTypeWorker: "0-1"}),
			want:   verdict{true, "TFJob ml/j succeeded: all 2 workers succeeded"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			met, msg := successPolicyMet(tc.job, tc.status)
			if diff := cmp.Diff(tc.want, verdict{met, msg}); diff != "" {
				t.Errorf("successPolicyMet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPermanentFailure checks that a replica that failed for good fails the job, unless
// it is the evaluator, which training does not need.
func TestPermanentFailure(t *testing.T) {
	evaluator := testutil.MakePod("j", "ml", tfv1.ReplicaTypeEvaluator, 0).Phase(corev1.PodFailed).ExitCode(1).Finalizer().Obj()
	cases := []struct {
		name string
		pods []*corev1.Pod
		want verdict
	}{
		{name: "nothing failed", pods: []*corev1.Pod{worker(0).Phase(corev1.PodRunning).Finalizer().Obj()}},
		{name: "the evaluator failed", pods: []*corev1.Pod{evaluator}},
		{
			name: "the evaluator and a worker failed",
			pods: []*corev1.Pod{evaluator, worker(1).Phase(corev1.PodFailed).ExitCode(1).Finalizer().Obj()},
			want: verdict{true, "worker 1 (pod j-worker-1) failed with exit code 1 (Error)"},
		},
		{
			name: "a parameter server failed",
			pods: []*corev1.Pod{testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 0).Phase(corev1.PodFailed).Reason("DeadlineExceeded").Finalizer().Obj()},
			want: verdict{true, "ps 0 (pod j-ps-0) failed with exit code -1 (DeadlineExceeded)"},
		},
		{
			name: "an evicted parameter server is a disruption, not a failure",
			pods: []*corev1.Pod{testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 0).Phase(corev1.PodFailed).Reason("Evicted").Finalizer().Obj()},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Chief().PS(1).Workers(2).Evaluator().Obj()
			failed, msg := permanentFailure(observePods(job, tc.pods, now))
			if diff := cmp.Diff(tc.want, verdict{failed, msg}); diff != "" {
				t.Errorf("permanentFailure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodsToClean checks which pods a finished job deletes under each cleanPodPolicy.
func TestPodsToClean(t *testing.T) {
	pods := []*corev1.Pod{
		testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 0).Phase(corev1.PodRunning).Obj(),
		testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 1).Phase(corev1.PodRunning).Deleting().Obj(),
		worker(0).Phase(corev1.PodSucceeded).Obj(),
		worker(1).Phase(corev1.PodFailed).Obj(),
		worker(2).Phase(corev1.PodPending).Obj(),
	}
	running := tfv1.CleanPodPolicyRunning
	cases := []struct {
		name   string
		policy *tfv1.CleanPodPolicy
		want   []string
	}{
		{name: "unset is Running", want: []string{"j-ps-0", "j-worker-2"}},
		{name: "Running", policy: &running, want: []string{"j-ps-0", "j-worker-2"}},
		{name: "All", policy: ptr.To(tfv1.CleanPodPolicyAll), want: []string{"j-ps-0", "j-worker-0", "j-worker-1", "j-worker-2"}},
		{name: "None", policy: ptr.To(tfv1.CleanPodPolicyNone)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").PS(2).Workers(3).Obj()
			job.Spec.RunPolicy.CleanPodPolicy = tc.policy
			var got []string
			for _, p := range podsToClean(job, pods) {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pods to clean (-want +got):\n%s", diff)
			}
		})
	}
}

// timer is a time-based policy's answer: expired, and otherwise how long until it is.
type timer struct {
	Expired bool
	Left    time.Duration
}

// TestTTLExpired checks when a finished job is deleted.
func TestTTLExpired(t *testing.T) {
	completed := now.Add(-10 * time.Minute)
	cases := []struct {
		name      string
		ttl       *int32
		completed *time.Time
		want      timer
	}{
		{name: "no TTL", completed: &completed},
		{name: "not finished", ttl: ptr.To[int32](60)},
		{name: "one second left", ttl: ptr.To[int32](601), completed: &completed, want: timer{Left: time.Second}},
		{name: "exactly expired", ttl: ptr.To[int32](600), completed: &completed, want: timer{Expired: true}},
		{name: "long expired", ttl: ptr.To[int32](60), completed: &completed, want: timer{Expired: true}},
		{name: "zero TTL", ttl: ptr.To[int32](0), completed: &now.Time, want: timer{Expired: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(1).Obj()
			job.Spec.RunPolicy.TTLSecondsAfterFinished = tc.ttl
			if tc.completed != nil {
				job.Status.CompletionTime = &metav1.Time{Time: *tc.completed}
			}
			expired, left := ttlExpired(job, now.Time)
			if diff := cmp.Diff(tc.want, timer{expired, left}); diff != "" {
				t.Errorf("ttlExpired (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeadlineExceeded checks when a running job has run out of time.
func TestDeadlineExceeded(t *testing.T) {
	started := metav1.NewTime(now.Add(-time.Hour))
	cases := []struct {
		name     string
		deadline *int64
		started  *metav1.Time
		want     timer
	}{
		{name: "no deadline", started: &started},
		{name: "not started", deadline: ptr.To[int64](60)},
		{name: "half an hour left", deadline: ptr.To[int64](5400), started: &started, want: timer{Left: 30 * time.Minute}},
		{name: "exactly reached", deadline: ptr.To[int64](3600), started: &started, want: timer{Expired: true}},
		{name: "passed", deadline: ptr.To[int64](60), started: &started, want: timer{Expired: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(1).Obj()
			job.Spec.RunPolicy.ActiveDeadlineSeconds = tc.deadline
			exceeded, left := deadlineExceeded(job, &tfv1.TFJobStatus{StartTime: tc.started}, now.Time)
			if diff := cmp.Diff(tc.want, timer{exceeded, left}); diff != "" {
				t.Errorf("deadlineExceeded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTypesToStart checks that under PSFirst nothing but the parameter servers starts
// until every one of them is Running.
func TestTypesToStart(t *testing.T) {
	ps := func(i int32) *testutil.PodWrapper {
		return testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, i).Finalizer()
	}
	psFirst := testutil.MakeTFJob("j", "ml").Chief().PS(2).Workers(2).Evaluator().StartupPolicy(tfv1.StartupPolicyPSFirst).Obj()
	all := []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypePS, tfv1.ReplicaTypeWorker, tfv1.ReplicaTypeEvaluator}
	cases := []struct {
		name string
		job  *tfv1.TFJob
		pods []*corev1.Pod
		want []tfv1.ReplicaType
	}{
		{name: "Parallel: everything at once", job: testutil.MakeTFJob("j", "ml").Chief().PS(2).Workers(2).Evaluator().Obj(), want: all},
		{name: "PSFirst: no PS pod yet", job: psFirst, want: []tfv1.ReplicaType{tfv1.ReplicaTypePS}},
		{name: "PSFirst: one PS running, one pending", job: psFirst,
			pods: []*corev1.Pod{ps(0).Phase(corev1.PodRunning).Obj(), ps(1).Obj()}, want: []tfv1.ReplicaType{tfv1.ReplicaTypePS}},
		{name: "PSFirst: one PS running, one being deleted", job: psFirst,
			pods: []*corev1.Pod{ps(0).Phase(corev1.PodRunning).Obj(), ps(1).Phase(corev1.PodRunning).Deleting().Obj()},
			want: []tfv1.ReplicaType{tfv1.ReplicaTypePS}},
		{name: "PSFirst: every PS running", job: psFirst,
			pods: []*corev1.Pod{ps(0).Phase(corev1.PodRunning).Obj(), ps(1).Phase(corev1.PodRunning).Obj()}, want: all},
		{name: "PSFirst without PS", job: testutil.MakeTFJob("j", "ml").Chief().Workers(2).StartupPolicy(tfv1.StartupPolicyPSFirst).Obj(),
			want: []tfv1.ReplicaType{tfv1.ReplicaTypeChief, tfv1.ReplicaTypeWorker}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := typesToStart(tc.job, observePods(tc.job, tc.pods, now))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("types to start (-want +got):\n%s", diff)
			}
		})
	}
}
