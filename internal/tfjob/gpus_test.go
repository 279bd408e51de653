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

// TestGPUsRequested: every replica type's GPUs times its replicas, one replica when
// unset: nvidia.com/gpu, its shared replicas and MIG profiles as the device plugin
// advertises them, and a deviceClaim's devices (count 1 when unset); not other
// nvidia.com/ resources.
func TestGPUsRequested(t *testing.T) {
	limits := func(l corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Limits: l}}
	}
	spec := func(replicas *int32, cs ...corev1.Container) *tfv1.ReplicaSpec {
		return &tfv1.ReplicaSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: cs}}}
	}
	claim := func(replicas *int32, count *int64) *tfv1.ReplicaSpec {
		s := spec(replicas, corev1.Container{})
		s.DeviceClaim = &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: count}
		return s
	}
	for _, tc := range []struct {
		name  string
		specs map[tfv1.ReplicaType]*tfv1.ReplicaSpec
		want  int64
	}{
		{"no replicas", nil, 0},
		{"nvidia.com/gpu: chief 1 + 3 workers × 2", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeChief:  spec(nil, gpuContainer("1")),
			tfv1.ReplicaTypeWorker: spec(ptr.To[int32](3), gpuContainer("2"), corev1.Container{}),
			tfv1.ReplicaTypePS:     spec(ptr.To[int32](2), corev1.Container{}),
			tfv1.ReplicaTypeMaster: nil,
		}, 7},
		{"--device-class --gpus 2: 4 workers × 2, chief's count unset", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeWorker: claim(ptr.To[int32](4), ptr.To[int64](2)),
			tfv1.ReplicaTypeChief:  claim(nil, nil),
		}, 9},
		{"--gpu-resource nvidia.com/mig-1g.10gb: 2 workers × 1", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeWorker: spec(ptr.To[int32](2), limits(corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")})),
		}, 2},
		{"a shared GPU and a network device", map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypeWorker: spec(nil, limits(corev1.ResourceList{
				"nvidia.com/gpu.shared": resource.MustParse("1"), "nvidia.com/sriov_rdma": resource.MustParse("1"),
			})),
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: tc.specs}}
			if got := GPUsRequested(job); got != tc.want {
				t.Errorf("GPUsRequested = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestGPUsAllocated counts only the pods on a node that have not finished, and the
// devices of a pod's claim by its replica type's deviceClaim.
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
	if got := GPUsAllocated(nil, pods); got != 3 {
		t.Errorf("GPUsAllocated = %d, want 3 (the running pod's 2 and the bound pending pod's 1)", got)
	}

	job := &tfv1.TFJob{Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		tfv1.ReplicaTypeWorker: {DeviceClaim: &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com", Count: ptr.To[int64](2)}},
		tfv1.ReplicaTypePS:     {},
	}}}
	claimed := func(rt tfv1.ReplicaType, node string) corev1.Pod {
		p := pod(node, corev1.PodRunning, "0")
		p.Labels = map[string]string{tfv1.LabelReplicaType: TaskType(rt)}
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "tfk8s-devices", ResourceClaimTemplateName: ptr.To("mnist-worker-devices")}}
		return p
	}
	ps := pod("node-a", corev1.PodRunning, "0")
	ps.Labels = map[string]string{tfv1.LabelReplicaType: TaskType(tfv1.ReplicaTypePS)}
	dra := []corev1.Pod{claimed(tfv1.ReplicaTypeWorker, "node-a"), claimed(tfv1.ReplicaTypeWorker, ""), ps}
	if got := GPUsAllocated(job, dra); got != 2 {
		t.Errorf("GPUsAllocated with a deviceClaim = %d, want 2 (the bound worker's claim of 2)", got)
	}
}
