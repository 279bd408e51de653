package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// failedPod is a pod whose TensorFlow container ran from start to end and exited 137,
// created after `before` failures in a row ("" for none).
func failedPod(before string, start, end time.Time) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "j-worker-0", CreationTimestamp: metav1.NewTime(start)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: tfjob.ContainerName}}},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			Name: tfjob.ContainerName,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, StartedAt: metav1.NewTime(start), FinishedAt: metav1.NewTime(end)}},
		}}},
	}
	if before != "" {
		pod.Annotations = map[string]string{tfv1.AnnotationFailuresInARow: before}
	}
	return pod
}

// TestRetryBackoff checks when a failed replica is re-created: 10s after its first
// failure, doubling with each failure in a row, at most 6 minutes; a replica that ran
// 10 minutes before failing starts again at 10s.
func TestRetryBackoff(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		pod      *corev1.Pod
		now      time.Time
		wantN    int32
		wantDue  bool
		wantLeft time.Duration
	}{
		{name: "first failure, just now", pod: failedPod("", t0, t0.Add(time.Minute)), now: t0.Add(time.Minute),
			wantN: 1, wantLeft: 10 * time.Second},
		{name: "first failure, 10s ago", pod: failedPod("", t0, t0.Add(time.Minute)), now: t0.Add(70 * time.Second),
			wantN: 1, wantDue: true},
		{name: "third failure in a row waits 40s", pod: failedPod("2", t0, t0.Add(time.Minute)), now: t0.Add(90 * time.Second),
			wantN: 3, wantLeft: 10 * time.Second},
		{name: "the delay stops growing at 6 minutes", pod: failedPod("20", t0, t0.Add(time.Minute)), now: t0.Add(time.Minute),
			wantN: 21, wantLeft: 6 * time.Minute},
		{name: "a replica that ran 10 minutes starts the count again", pod: failedPod("5", t0, t0.Add(10*time.Minute)),
			now: t0.Add(10 * time.Minute), wantN: 1, wantLeft: 10 * time.Second},
		{name: "a garbled annotation counts as none", pod: failedPod("many", t0, t0.Add(time.Minute)), now: t0.Add(time.Minute),
			wantN: 1, wantLeft: 10 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if n := failuresInARow(tc.pod); n != tc.wantN {
				t.Errorf("failuresInARow = %d, want %d", n, tc.wantN)
			}
			due, left := retryDue(tc.pod, DefaultRetryBackoff, tc.now)
			if due != tc.wantDue || left != tc.wantLeft {
				t.Errorf("retryDue = %v, %v; want %v, %v", due, left, tc.wantDue, tc.wantLeft)
			}
		})
	}
}

// TestFailedAtWithoutContainerState: a pod that failed around its container (evicted
// before it started) is timed by its conditions.
func TestFailedAtWithoutContainerState(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))},
			{Type: corev1.PodReady, LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))},
		}},
	}
	if got := failedAt(pod); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("failedAt = %v, want %v", got, t0.Add(time.Minute))
	}
}
