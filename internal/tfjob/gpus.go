package tfjob

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// GPUResource is the extended resource NVIDIA's device plugin advertises for a whole
// GPU, the one --gpus counts unless --gpu-resource names another.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// GPUsRequested is how many GPUs the whole job asks for: each replica type's GPUs
// (ReplicaGPUs) times its replicas. The CLI's `tfk8s list` and the dashboard's jobs
// list show it beside GPUsAllocated, so both count the same way.
func GPUsRequested(job *tfv1.TFJob) int64 {
	var n int64
	for _, spec := range job.Spec.TFReplicaSpecs {
		if spec != nil {
			n += ReplicaGPUs(spec) * int64(Replicas(spec))
		}
	}
	return n
}

// ReplicaGPUs is how many GPUs one replica asks for: its pod's (PodGPUs) and the
// devices of its deviceClaim (count, 1 when unset).
func ReplicaGPUs(spec *tfv1.ReplicaSpec) int64 {
	n := PodGPUs(&spec.Template.Spec)
	if dc := spec.DeviceClaim; dc != nil {
		n += ptr.Deref(dc.Count, 1)
	}
	return n
}

// GPUsAllocated is how many GPUs the given pods of job hold now: those of every pod
// bound to a node and not finished, since a pending pod holds none and a finished one
// has given its GPUs back to the node. A pod with resource claims holds, besides, the
// devices of its replica type's deviceClaim (job nil: none counted).
func GPUsAllocated(job *tfv1.TFJob, pods []corev1.Pod) int64 {
	var n int64
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n += PodGPUs(&p.Spec) + claimedDevices(job, p)
	}
	return n
}

// claimedDevices is the count of the deviceClaim of the pod's replica type (by its
// tfk8s.io/replica-type label), if the pod has resource claims.
func claimedDevices(job *tfv1.TFJob, p *corev1.Pod) int64 {
	if job == nil || len(p.Spec.ResourceClaims) == 0 {
		return 0
	}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		if spec != nil && spec.DeviceClaim != nil && TaskType(rt) == p.Labels[tfv1.LabelReplicaType] {
			return ptr.Deref(spec.DeviceClaim.Count, 1)
		}
	}
	return 0
}

// PodGPUs is the number of GPUs one pod asks for, as the scheduler counts it: the sum
// over its containers and sidecars (init containers that restart always), or the most
// any single init container asks for while the sidecars before it run, whichever is
// larger. A container's count is its limit, or its request when no limit is set.
func PodGPUs(spec *corev1.PodSpec) int64 {
	var sidecars, initPeak int64
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		n := containerGPUs(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += n
			continue
		}
		initPeak = max(initPeak, sidecars+n)
	}
	sum := sidecars
	for i := range spec.Containers {
		sum += containerGPUs(&spec.Containers[i])
	}
	return max(sum, initPeak)
}

// IsGPU says whether a resource counts as GPUs: those NVIDIA's device plugin
// advertises, nvidia.com/gpu, its shared replicas (nvidia.com/gpu.shared) and MIG
// profiles (nvidia.com/mig-1g.10gb), one device each. Other nvidia.com/ resources
// (network devices) are not GPUs.
func IsGPU(name corev1.ResourceName) bool {
	s := string(name)
	return name == GPUResource || strings.HasPrefix(s, string(GPUResource)+".") || strings.HasPrefix(s, "nvidia.com/mig-")
}

// containerGPUs is a container's GPUs (IsGPU): for each resource its limit, else its
// request.
func containerGPUs(c *corev1.Container) int64 {
	var n int64
	for name, q := range c.Resources.Limits {
		if IsGPU(name) {
			n += q.Value()
		}
	}
	for name, q := range c.Resources.Requests {
		if _, limited := c.Resources.Limits[name]; IsGPU(name) && !limited {
			n += q.Value()
		}
	}
	return n
}
