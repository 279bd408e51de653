package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The functions here play the kubelet: they write the status a kubelet would.

// setRunning marks pods Running, their containers started.
func setRunning(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		writePodStatus(t, ns, name, func(pod *corev1.Pod) {
			pod.Status.Phase = corev1.PodRunning
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name:  pod.Spec.Containers[0].Name,
				Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			}}
		})
	}
}

// setExited marks a pod finished: Succeeded if its container exited 0, else Failed.
func setExited(t *testing.T, ns, name string, exitCode int32) {
	t.Helper()
	writePodStatus(t, ns, name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodSucceeded
		reason := "Completed"
		if exitCode != 0 {
			pod.Status.Phase = corev1.PodFailed
			reason = "Error"
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, FinishedAt: metav1.NewTime(time.Now().Truncate(time.Second)),
			}},
		}}
	})
}

// setRestarted marks a Running pod whose container the kubelet restarted n times, the
// last time after exiting with exitCode.
func setRestarted(t *testing.T, ns, name string, n, exitCode int32) {
	t.Helper()
	writePodStatus(t, ns, name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:         pod.Spec.Containers[0].Name,
			RestartCount: n,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: "Error", FinishedAt: metav1.NewTime(time.Now().Truncate(time.Second)),
			}},
		}}
	})
}

// setEvicted marks a pod failed by eviction, as the kubelet does under node pressure.
func setEvicted(t *testing.T, ns, name string) {
	t.Helper()
	writePodStatus(t, ns, name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		pod.Status.Message = "The node was low on resource: memory."
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet",
		})
	})
}

func writePodStatus(t *testing.T, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		mutate(pod)
		return k8sClient.Status().Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatalf("writing the status of pod %s: %v", name, err)
	}
}
