package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestFailureOf checks what a failed pod's failure says: the container's exit code, the
// pod's reason before the container's, and when it finished.
func TestFailureOf(t *testing.T) {
	finished := metav1.NewTime(now.Add(-time.Minute))
	long := strings.Repeat("x", 600)
	cases := []struct {
		name string
		pod  *corev1.Pod
		want tfv1.ReplicaFailure
	}{
		{
			name: "container exit code and reason",
			pod:  worker(0).Phase(corev1.PodFailed).ExitCode(2).Obj(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 2, Reason: "Error", Time: now},
		},
		{
			name: "the pod's reason and message before the container's",
			pod: func() *corev1.Pod {
				pod := worker(0).Phase(corev1.PodFailed).Reason("Evicted").ExitCode(137).Obj()
				pod.Status.Message = "The node was low on resource: memory."
				return pod
			}(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 137, Reason: "Evicted",
				Message: "The node was low on resource: memory.", Time: now},
		},
		{
			name: "no container ever terminated",
			pod:  worker(0).Phase(corev1.PodFailed).Reason("NodeLost").Obj(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: -1, Reason: "NodeLost", Time: now},
		},
		{
			name: "finish time and a long message, its end kept",
			pod: func() *corev1.Pod {
				pod := worker(0).Phase(corev1.PodFailed).ExitCode(1).Obj()
				pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt = finished
				pod.Status.ContainerStatuses[0].State.Terminated.Message = long
				return pod
			}(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 1, Reason: "Error",
				Message: "..." + long[len(long)-509:], Time: finished},
		},
		{
			name: "a log's last lines: the end kept from a line's start",
			pod: func() *corev1.Pod {
				pod := worker(0).Phase(corev1.PodFailed).ExitCode(77).Obj()
				pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt = finished
				pod.Status.ContainerStatuses[0].State.Terminated.Message = strings.Repeat("step\n", 200) +
					"tfk8s-agent: the storage refused the credentials\n"
				return pod
			}(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 77, Reason: "Error",
				Message: "..." + strings.Repeat("step\n", 92) + "tfk8s-agent: the storage refused the credentials", Time: finished},
		},
		{
			name: "the tensorflow container's termination, not a sidecar's",
			pod: func() *corev1.Pod {
				pod := worker(0).Phase(corev1.PodFailed).ExitCode(3).Obj()
				pod.Spec.Containers = append([]corev1.Container{{Name: "proxy"}}, pod.Spec.Containers...)
				pod.Status.ContainerStatuses = append([]corev1.ContainerStatus{{Name: "proxy",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}},
					pod.Status.ContainerStatuses...)
				return pod
			}(),
			want: tfv1.ReplicaFailure{Index: 0, Pod: "j-worker-0", ExitCode: 3, Reason: "Error", Time: now},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := failureOf(tc.pod, ReplicaKey{Type: tfv1.ReplicaTypeWorker, Index: 0}, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAllReplicasRunning checks that a job is running when every replica that has not
// finished has a Running pod that is not being deleted.
func TestAllReplicasRunning(t *testing.T) {
	running := func(i int32) *corev1.Pod { return worker(i).Phase(corev1.PodRunning).Finalizer().Obj() }
	cases := []struct {
		name      string
		succeeded string
		pods      []*corev1.Pod
		want      bool
	}{
		{name: "every worker running", pods: []*corev1.Pod{running(0), running(1)}, want: true},
		{name: "one pending", pods: []*corev1.Pod{running(0), worker(1).Obj()}},
		{name: "one missing", pods: []*corev1.Pod{running(0)}},
		{name: "one being deleted", pods: []*corev1.Pod{running(0), worker(1).Phase(corev1.PodRunning).Deleting().Finalizer().Obj()}},
		{name: "a succeeded worker need not run", succeeded: "1", pods: []*corev1.Pod{running(0)}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("j", "ml").Workers(2).Obj()
			job.Status.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{tfv1.ReplicaTypeWorker: {SucceededIndexes: tc.succeeded}}
			o := observePods(job, tc.pods, now)
			if got := allReplicasRunning(job, o, []tfv1.ReplicaType{tfv1.ReplicaTypeWorker}); got != tc.want {
				t.Errorf("allReplicasRunning = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestJobState checks the one-word state: a final condition first, then the most
// telling of the others.
func TestJobState(t *testing.T) {
	cond := func(typ tfv1.JobState, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: status, Reason: "Test"}
	}
	cases := []struct {
		name       string
		conditions []metav1.Condition
		want       tfv1.JobState
	}{
		{name: "no condition", want: ""},
		{name: "created", conditions: []metav1.Condition{cond(tfv1.JobCreated, metav1.ConditionTrue)}, want: tfv1.JobCreated},
		{name: "running", conditions: []metav1.Condition{
			cond(tfv1.JobCreated, metav1.ConditionTrue), cond(tfv1.JobRunning, metav1.ConditionTrue)}, want: tfv1.JobRunning},
		{name: "restarting over running", conditions: []metav1.Condition{
			cond(tfv1.JobRunning, metav1.ConditionTrue), cond(tfv1.JobRestarting, metav1.ConditionTrue)}, want: tfv1.JobRestarting},
		{name: "a false condition does not count", conditions: []metav1.Condition{
			cond(tfv1.JobCreated, metav1.ConditionTrue), cond(tfv1.JobRestarting, metav1.ConditionFalse)}, want: tfv1.JobCreated},
		{name: "suspended over restarting", conditions: []metav1.Condition{
			cond(tfv1.JobRestarting, metav1.ConditionTrue), cond(tfv1.JobSuspended, metav1.ConditionTrue)}, want: tfv1.JobSuspended},
		{name: "succeeded over suspended", conditions: []metav1.Condition{
			cond(tfv1.JobSuspended, metav1.ConditionTrue), cond(tfv1.JobSucceeded, metav1.ConditionTrue)}, want: tfv1.JobSucceeded},
		{name: "failed over everything", conditions: []metav1.Condition{
			cond(tfv1.JobCreated, metav1.ConditionTrue), cond(tfv1.JobRunning, metav1.ConditionTrue),
			cond(tfv1.JobSucceeded, metav1.ConditionTrue), cond(tfv1.JobFailed, metav1.ConditionTrue)}, want: tfv1.JobFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := jobState(&tfv1.TFJobStatus{Conditions: tc.conditions})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("jobState (-want +got):\n%s", diff)
			}
		})
	}
}
