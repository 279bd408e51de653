package tfjob

import (
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// GPUResource is the extended resource NVIDIA's device plugin advertises, the one the
// CLI's and the dashboard's GPU columns count.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// GPUsRequested is how many GPUs the whole job asks for: each replica type's pod's GPUs
// (PodGPUs) times its replicas. The CLI's `tfk8s list` and the dashboard's jobs list
// show it beside GPUsAllocated, so both count the same way.
func GPUsRequested(job *tfv1.TFJob) int64 {
	var n int64
	for _, spec := range job.Spec.TFReplicaSpecs {
		if spec == nil {
			continue
		}
		n += PodGPUs(&spec.Template.Spec) * int64(Replicas(spec))
	}
	return n
}

// GPUsAllocated is how many GPUs the given pods hold now: those of every pod bound to a
// node and not finished, since a pending pod holds none and a finished one has given
// its GPUs back to the node.
func GPUsAllocated(pods []corev1.Pod) int64 {
	var n int64
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n += PodGPUs(&p.Spec)
	}
	return n
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

// containerGPUs is a container's GPU limit, else its request.
func containerGPUs(c *corev1.Container) int64 {
	if q, ok := c.Resources.Limits[GPUResource]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[GPUResource]; ok {
		return q.Value()
	}
	return 0
}
