package tfjob

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// gpuContainer is a container that asks for n GPUs as a limit.
func gpuContainer(n string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{GPUResource: resource.MustParse(n)},
	}}
}

// TestPodGPUs counts a pod's GPUs as the scheduler does.
func TestPodGPUs(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	requestOnly := corev1.Container{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{GPUResource: resource.MustParse("3")},
	}}
	sidecar := gpuContainer("1")
	sidecar.RestartPolicy = always
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int64
	}{
		{"no GPUs", corev1.PodSpec{Containers: []corev1.Container{{}}}, 0},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{gpuContainer("2"), gpuContainer("1"), {}}}, 3},
		{"a request without a limit counts", corev1.PodSpec{Containers: []corev1.Container{requestOnly}}, 3},
		{"a larger init container wins", corev1.PodSpec{InitContainers: []corev1.Container{gpuContainer("4")}, Containers: []corev1.Container{gpuContainer("1")}}, 4},
		{"a smaller init container does not add", corev1.PodSpec{InitContainers: []corev1.Container{gpuContainer("1")}, Containers: []corev1.Container{gpuContainer("2")}}, 2},
		{"a sidecar adds to the containers", corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{gpuContainer("2")}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodGPUs(&tc.spec); got != tc.want {
				t.Errorf("PodGPUs = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestGPUsRequested: every replica type's pod's GPUs times its replicas, one replica
// when unset.
func TestGPUsRequested(t *testing.T) {
	spec := func(replicas *int32, cs ...corev1.Container) *tfv1.ReplicaSpec {
		return &tfv1.ReplicaSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}}
	}
	job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeChief:  spec(nil, gpuContainer("1")),
		tfv1.ReplicaTypeWorker: spec(ptr.To[int32](3), gpuContainer("2"), corev1.Container{}),
		tfv1.ReplicaTypePS:     spec(ptr.To[int32](2), corev1.Container{}),
		tfv1.ReplicaTypeMaster: nil,
	}}}
	if got := GPUsRequested(job); got != 7 {
		t.Errorf("GPUsRequested = %d, want 7 (chief 1 + 3 workers × 2)", got)
	}
	if got := GPUsRequested(&tfv1.TFJob{}); got != 0 {
		t.Errorf("GPUsRequested of an empty job = %d, want 0", got)
	}
}

// TestGPUsAllocated counts only the pods on a node that have not finished.
func TestGPUsAllocated(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase, gpus string) corev1.Pod {
		return corev1.Pod{
			Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{gpuContainer(gpus)}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	pods := []corev1.Pod{
		pod("node-a", corev1.PodRunning, "2"),
		pod("node-b", corev1.PodPending, "1"), // bound, its containers starting
		pod("", corev1.PodPending, "4"),       // not scheduled
		pod("node-a", corev1.PodSucceeded, "8"),
		pod("node-b", corev1.PodFailed, "8"),
	}
	if got := GPUsAllocated(pods); got != 3 {
		t.Errorf("GPUsAllocated = %d, want 3 (the running pod's 2 and the bound pending pod's 1)", got)
	}
}
