package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// conditionView is a condition as a user reads it in kubectl get -o yaml.
type conditionView struct {
	Type, Status, Reason, Message string
}

func viewConditions(st *tfv1.TFJobStatus) []conditionView {
	var out []conditionView
	for _, c := range st.Conditions {
		out = append(out, conditionView{c.Type, string(c.Status), c.Reason, c.Message})
	}
	return out
}

// withConditions is a status holding the given True conditions, set an hour ago.
func withConditions(types ...tfv1.JobState) tfv1.TFJobStatus {
	st := tfv1.TFJobStatus{StartTime: &metav1.Time{Time: now.Add(-time.Hour)}}
	for _, typ := range types {
		setCondition(&st, typ, metav1.ConditionTrue, "Earlier", "set earlier", metav1.NewTime(now.Add(-time.Hour)))
		if typ == tfv1.JobSucceeded || typ == tfv1.JobFailed {
			st.CompletionTime = st.StartTime
		}
	}
	return st
}

// TestUpdateConditions walks the job's state machine: from what its pods say and its
// policies, the conditions a user sees, and when tfk8s looks again.
func TestUpdateConditions(t *testing.T) {
	const created, running = "TFJob ml/j is created", "TFJob ml/j is running"
	job := func() *testutil.TFJobWrapper { return testutil.MakeTFJob("j", "ml").PS(1).Workers(2) }
	ps := testutil.MakePod("j", "ml", tfv1.ReplicaTypePS, 0)
	runningPods := []*corev1.Pod{ps.Phase(corev1.PodRunning).Obj(), worker(0).Phase(corev1.PodRunning).Obj(), worker(1).Phase(corev1.PodRunning).Obj()}
	cases := []struct {
		name        string
		job         *tfv1.TFJob
		status      tfv1.TFJobStatus
		pods        []*corev1.Pod
		want        []conditionView
		wantRequeue time.Duration
	}{
		{name: "a new job's pods pending: created", job: job().Obj(),
			pods: []*corev1.Pod{worker(0).Obj()},
			want: []conditionView{{"Created", "True", tfv1.ReasonCreated, created}}},
		{name: "every replica running", job: job().Obj(), status: withConditions(tfv1.JobCreated), pods: runningPods,
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"}, {"Running", "True", tfv1.ReasonRunning, running}}},
		{name: "a replica restarting", job: job().RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj(),
			status: withConditions(tfv1.JobCreated, tfv1.JobRunning),
			pods:   []*corev1.Pod{ps.Phase(corev1.PodRunning).Obj(), worker(0).Phase(corev1.PodRunning).Obj(), worker(1).Finalizer().Phase(corev1.PodFailed).ExitCode(137).Obj()},
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Running", "False", tfv1.ReasonRestarting, "TFJob ml/j is restarting 1 replica(s)"},
				{"Restarting", "True", tfv1.ReasonRestarting, "TFJob ml/j is restarting 1 replica(s)"}}},
		{name: "running again after a restart", job: job().Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobRestarting), pods: runningPods,
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Restarting", "False", tfv1.ReasonRunning, tfv1.MessageRunningAgain}, {"Running", "True", tfv1.ReasonRunning, running}}},
		{name: "suspended", job: job().Suspend(true).Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobRunning),
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Running", "False", tfv1.ReasonSuspended, tfv1.MessageSuspended}, {"Suspended", "True", tfv1.ReasonSuspended, tfv1.MessageSuspended}}},
		{name: "resumed", job: job().Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobSuspended),
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"}, {"Suspended", "False", tfv1.ReasonResumed, tfv1.MessageResumed}}},
		{name: "deadline still ahead: look again then", job: job().ActiveDeadlineSeconds(3900).Obj(), status: withConditions(tfv1.JobCreated),
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"}}, wantRequeue: 5 * time.Minute},
		{name: "deadline passed", job: job().ActiveDeadlineSeconds(60).Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobRunning), pods: runningPods,
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Running", "False", tfv1.ReasonDeadlineExceeded, "TFJob ran longer than activeDeadlineSeconds (60s)"},
				{"Failed", "True", tfv1.ReasonDeadlineExceeded, "TFJob ran longer than activeDeadlineSeconds (60s)"}}},
		{name: "a worker failed for good", job: job().Obj(), status: withConditions(tfv1.JobCreated),
			pods: []*corev1.Pod{worker(1).Finalizer().Phase(corev1.PodFailed).ExitCode(2).Obj()},
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Failed", "True", tfv1.ReasonFailed, "worker 1 (pod j-worker-1) failed with exit code 2 (Error)"},
				{"Running", "False", tfv1.ReasonFailed, "worker 1 (pod j-worker-1) failed with exit code 2 (Error)"}}},
		{name: "restarts past the backoff limit", job: job().BackoffLimit(0).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj(),
			status: withConditions(tfv1.JobCreated, tfv1.JobRunning),
			pods:   []*corev1.Pod{worker(1).Finalizer().Phase(corev1.PodFailed).ExitCode(137).Obj()},
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Running", "False", tfv1.ReasonBackoffLimitExceeded, "replicas restarted 1 times, more than backoffLimit 0; last: worker 1 (pod j-worker-1) failed with exit code 137 (Error)"},
				{"Failed", "True", tfv1.ReasonBackoffLimitExceeded, "replicas restarted 1 times, more than backoffLimit 0; last: worker 1 (pod j-worker-1) failed with exit code 137 (Error)"}}},
		{name: "worker 0 succeeded", job: job().Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobRunning),
			pods: []*corev1.Pod{worker(0).Finalizer().Phase(corev1.PodSucceeded).Obj()},
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"},
				{"Running", "False", tfv1.ReasonSucceeded, "TFJob ml/j succeeded: worker 0 succeeded"},
				{"Succeeded", "True", tfv1.ReasonSucceeded, "TFJob ml/j succeeded: worker 0 succeeded"}}},
		{name: "a finished job is final, whatever its pods do", job: job().Obj(), status: withConditions(tfv1.JobCreated, tfv1.JobSucceeded),
			pods: []*corev1.Pod{worker(1).Finalizer().Phase(corev1.PodFailed).ExitCode(2).Obj()},
			want: []conditionView{{"Created", "True", "Earlier", "set earlier"}, {"Succeeded", "True", "Earlier", "set earlier"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.job.Status = tc.status
			o := observePods(tc.job, tc.pods, now)
			requeue := updateConditions(tc.job, o, now)
			if diff := cmp.Diff(tc.want, viewConditions(o.status)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("look again in %v, want %v", requeue, tc.wantRequeue)
			}
			if finished := jobFinished(o.status); finished != (o.status.CompletionTime != nil) {
				t.Errorf("finished %v but completion time %v", finished, o.status.CompletionTime)
			}
			if jobSuspended(tc.job) && o.status.StartTime != nil {
				t.Errorf("a suspended job keeps its start time: the deadline would count suspended time")
			}
		})
	}
}
