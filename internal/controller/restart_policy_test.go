package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestShouldRetry checks which failed pods are re-created under each restart policy:
// under ExitCode, signals (128 and above) and disruptions are retried and the program's
// own exit codes (1 to 127) are not.
func TestShouldRetry(t *testing.T) {
	failed := func() *testutil.PodWrapper { return worker(0).Phase(corev1.PodFailed) }
	cases := []struct {
		name   string
		policy tfv1.RestartPolicy
		pod    *corev1.Pod
		want   bool
	}{
		{name: "ExitCode: exit 1", policy: tfv1.RestartPolicyExitCode, pod: failed().ExitCode(1).Obj()},
		{name: "ExitCode: exit 127", policy: tfv1.RestartPolicyExitCode, pod: failed().ExitCode(127).Obj()},
		{name: "ExitCode: exit 128", policy: tfv1.RestartPolicyExitCode, pod: failed().ExitCode(128).Obj(), want: true},
		{name: "ExitCode: SIGKILL", policy: tfv1.RestartPolicyExitCode, pod: failed().ExitCode(137).Obj(), want: true},
		{name: "ExitCode: SIGTERM", policy: tfv1.RestartPolicyExitCode, pod: failed().ExitCode(143).Obj(), want: true},
		{name: "ExitCode: evicted", policy: tfv1.RestartPolicyExitCode, pod: failed().Reason("Evicted").ExitCode(1).Obj(), want: true},
		{name: "ExitCode: disruption target", policy: tfv1.RestartPolicyExitCode,
			pod: failed().ExitCode(2).Condition(corev1.DisruptionTarget).Obj(), want: true},
		{name: "ExitCode: no container ever exited", policy: tfv1.RestartPolicyExitCode, pod: failed().Obj(), want: true},
		{name: "OnFailure: exit 1", policy: tfv1.RestartPolicyOnFailure, pod: failed().ExitCode(1).Obj(), want: true},
		{name: "Always: exit 1", policy: tfv1.RestartPolicyAlways, pod: failed().ExitCode(1).Obj(), want: true},
		{name: "Never: SIGKILL", policy: tfv1.RestartPolicyNever, pod: failed().ExitCode(137).Obj()},
		{name: "Never: evicted", policy: tfv1.RestartPolicyNever, pod: failed().Reason("Evicted").Obj()},
		{name: "unset is Never", policy: "", pod: failed().ExitCode(137).Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := shouldRetry(tc.policy, tc.pod); got != tc.want {
				t.Errorf("shouldRetry = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestIsDisruption checks which failed pods were disrupted rather than failed by their
// program.
func TestIsDisruption(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "evicted", pod: worker(0).Reason("Evicted").Obj(), want: true},
		{name: "preempted", pod: worker(0).Reason("Preempting").Obj(), want: true},
		{name: "node lost", pod: worker(0).Reason("NodeLost").Obj(), want: true},
		{name: "node shutdown", pod: worker(0).Reason("NodeShutdown").Obj(), want: true},
		{name: "admission error", pod: worker(0).Reason("UnexpectedAdmissionError").Obj(), want: true},
		{name: "DisruptionTarget condition", pod: worker(0).Condition(corev1.DisruptionTarget).Obj(), want: true},
		{
			name: "DisruptionTarget condition false",
			pod: func() *corev1.Pod {
				pod := worker(0).Obj()
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}}
				return pod
			}(),
		},
		{name: "deadline exceeded", pod: worker(0).Reason("DeadlineExceeded").Obj()},
		{name: "evicted for its emptyDir's sizeLimit", pod: evictedWith(`Usage of EmptyDir volume "tfk8s-fetch-0" exceeds the limit "20Gi". `)},
		{name: "evicted for its container's storage limit", pod: evictedWith(`Container tensorflow exceeded its local ephemeral storage limit "1Gi". `)},
		{name: "evicted for the pod's storage limit", pod: evictedWith("Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ")},
		{name: "evicted for the node's memory", pod: evictedWith("The node was low on resource: memory. "), want: true},
		{name: "program error", pod: worker(0).ExitCode(1).Obj()},
		{name: "pending pod deleted before binding", pod: testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, 0).Deleting().Obj(), want: true},
		{name: "running pod deleted", pod: testutil.MakePod("j", "ml", tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodRunning).Deleting().Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isDisruption(tc.pod); got != tc.want {
				t.Errorf("isDisruption = %v, want %v", got, tc.want)
			}
		})
	}
}

// evictedWith is a worker pod the kubelet evicted with message.
func evictedWith(message string) *corev1.Pod {
	pod := worker(0).Phase(corev1.PodFailed).Reason("Evicted").Obj()
	pod.Status.Message = message
	return pod
}

// TestBackoffLimitExceeded checks that backoffLimit is the number of restarts allowed,
// all replica types together.
func TestBackoffLimitExceeded(t *testing.T) {
	status := func(chief, worker int32) *tfv1.TFJobStatus {
		return &tfv1.TFJobStatus{ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
			tfv1.ReplicaTypeChief: {Restarts: chief}, tfv1.ReplicaTypeWorker: {Restarts: worker}}}
	}
	limited := func(n int32) *tfv1.TFJob {
		return testutil.MakeTFJob("j", "ml").Chief().Workers(2).BackoffLimit(n).Obj()
	}
	cases := []struct {
		name   string
		job    *tfv1.TFJob
		status *tfv1.TFJobStatus
		want   bool
	}{
		{name: "limit 3, no restart", job: limited(3), status: status(0, 0)},
		{name: "limit 3, 3 restarts", job: limited(3), status: status(1, 2)},
		{name: "limit 3, 4 restarts", job: limited(3), status: status(1, 3), want: true},
		{name: "limit 0, 1 restart", job: limited(0), status: status(0, 1), want: true},
		{name: "no limit, 100 restarts", job: testutil.MakeTFJob("j", "ml").Chief().Workers(2).Obj(), status: status(50, 50)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := backoffLimitExceeded(tc.job, tc.status); got != tc.want {
				t.Errorf("backoffLimitExceeded = %v, want %v", got, tc.want)
			}
		})
	}
}
