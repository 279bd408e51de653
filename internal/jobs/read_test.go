package jobs

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodWaitState: what readyPod says a pod is doing, and which pods serve.
func TestPodWaitState(t *testing.T) {
	now := metav1.Now()
	ready := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	}
	for _, tc := range []struct {
		name    string
		pod     corev1.Pod
		state   string
		serving bool
	}{
		{"unscheduled", corev1.Pod{}, "Pending, not scheduled to a node yet", false},
		{"pulling", corev1.Pod{
			Spec: corev1.PodSpec{NodeName: "n"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "mirror", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "tensorboard", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
			}},
		}, "Pending (tensorboard: ContainerCreating)", false},
		{"not ready", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionFalse)}},
			"Running, not ready", false},
		{"ready", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)}},
			"", true},
		{"ready but terminating", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Spec:       corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)},
		}, "terminating", false},
		{"failed", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}, "Failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodWaitState(&tc.pod); !tc.serving && got != tc.state {
				t.Errorf("PodWaitState = %q, want %q", got, tc.state)
			}
			if got := PodServing(&tc.pod); got != tc.serving {
				t.Errorf("PodServing = %t, want %t", got, tc.serving)
			}
		})
	}
}
