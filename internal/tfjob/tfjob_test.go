package tfjob

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestNames checks the names every part of tfk8s derives from a replica.
func TestNames(t *testing.T) {
	if got := PodName("mnist", tfv1.ReplicaTypePS, 1); got != "mnist-ps-1" {
		t.Errorf("PodName = %q, want mnist-ps-1", got)
	}
	if got := ReplicaName(tfv1.ReplicaTypeWorker, 12); got != "worker-12" {
		t.Errorf("ReplicaName = %q, want worker-12", got)
	}
	for _, tc := range []struct {
		spec *tfv1.ReplicaSpec
		want int32
	}{{nil, 0}, {&tfv1.ReplicaSpec{}, 1}, {&tfv1.ReplicaSpec{Replicas: ptr.To[int32](0)}, 0}, {&tfv1.ReplicaSpec{Replicas: ptr.To[int32](7)}, 7}} {
		if got := Replicas(tc.spec); got != tc.want {
			t.Errorf("Replicas(%+v) = %d, want %d", tc.spec, got, tc.want)
		}
	}
}

// TestTerminated: the TensorFlow container's last end, a sidecar's never.
func TestTerminated(t *testing.T) {
	ended := &corev1.ContainerStateTerminated{ExitCode: 137}
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sidecar"}, {Name: ContainerName}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "sidecar", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
			{Name: ContainerName, RestartCount: 1, LastTerminationState: corev1.ContainerState{Terminated: ended}},
		}},
	}
	if got := Terminated(pod); got != ended {
		t.Errorf("Terminated = %+v, want the tensorflow container's last termination %+v", got, ended)
	}
	pod.Status.ContainerStatuses = pod.Status.ContainerStatuses[:1]
	if got := Terminated(pod); got != nil {
		t.Errorf("Terminated = %+v with no status of the tensorflow container, want nil", got)
	}
}
