package testutil

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubelet plays the kubelet in tests on a control plane without nodes: it writes the pod
// status a kubelet would.
type Kubelet struct{ Client client.Client }

// SetRunning marks pods Running, their containers started.
func (k Kubelet) SetRunning(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		k.WritePodStatus(t, ns, name, func(pod *corev1.Pod) {
			pod.Status.Phase = corev1.PodRunning
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name:  pod.Spec.Containers[0].Name,
				Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
			}}
		})
	}
}

// SetWaiting leaves a pod Pending with its first container waiting for reason
// (ErrImagePull...), as the kubelet says it with message.
func (k Kubelet) SetWaiting(t *testing.T, ns, name, reason, message string) {
	t.Helper()
	k.WritePodStatus(t, ns, name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodPending
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  pod.Spec.Containers[0].Name,
			Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}}
	})
}

// SetExited marks a pod finished: Succeeded if its container exited 0, else Failed.
func (k Kubelet) SetExited(t *testing.T, ns, name string, exitCode int32) {
	t.Helper()
	k.WritePodStatus(t, ns, name, func(pod *corev1.Pod) {
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

// SetRestarted marks a Running pod whose container the kubelet restarted n times, the
// last time after exiting with exitCode.
func (k Kubelet) SetRestarted(t *testing.T, ns, name string, n, exitCode int32) {
	t.Helper()
	k.WritePodStatus(t, ns, name, func(pod *corev1.Pod) {
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

// SetEvicted marks a pod failed by eviction, as the kubelet does under node pressure.
func (k Kubelet) SetEvicted(t *testing.T, ns, name string) {
	t.Helper()
	k.WritePodStatus(t, ns, name, func(pod *corev1.Pod) {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason = "Evicted"
		pod.Status.Message = "The node was low on resource: memory."
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet",
		})
	})
}

func (k Kubelet) WritePodStatus(t *testing.T, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := k.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			return err
		}
		mutate(pod)
		return k.Client.Status().Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatalf("writing the status of pod %s: %v", name, err)
	}
}

// Bind assigns a pod to a node, as the scheduler does.
func (k Kubelet) Bind(t *testing.T, ns, pod, node string) {
	t.Helper()
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}}
	if err := k.Client.SubResource("binding").Create(context.Background(), target, binding); err != nil {
		t.Fatalf("binding pod %s to %s: %v", pod, node, err)
	}
}
