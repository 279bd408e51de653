package jobspec

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// gpuResourceHelp is --gpu-resource's help.
var gpuResourceHelp = "extended resource --gpus counts instead of " + string(tfjob.GPUResource) +
	": a MIG profile (nvidia.com/mig-1g.10gb) or a shared GPU (nvidia.com/gpu.shared) as NVIDIA's device plugin advertises it; see docs/gpus.md"

// checkGPUResource checks --gpu-resource: one of the GPU resources NVIDIA's device
// plugin advertises (tfjob.IsGPU), which needs --gpus to count it. The same rule
// reads it back from a job (gpuResourceOf) and replaces a manifest's GPUs
// (removeGPUResources), so what is accepted here survives render --to tfk8s.
func (p Params) checkGPUResource(v *Values) error {
	if p.GPUResource == "" {
		return nil
	}
	domain, name, ok := strings.Cut(p.GPUResource, "/")
	if !ok || domain == "" || name == "" {
		return fmt.Errorf("--gpu-resource %q: want an extended resource DOMAIN/NAME, e.g. nvidia.com/mig-1g.10gb", p.GPUResource)
	}
	if errs := validation.IsQualifiedName(p.GPUResource); len(errs) > 0 {
		return fmt.Errorf("--gpu-resource %q: not a resource name: %s", p.GPUResource, strings.Join(errs, "; "))
	}
	if !tfjob.IsGPU(corev1.ResourceName(p.GPUResource)) {
		return fmt.Errorf("--gpu-resource %q: want a GPU resource of NVIDIA's device plugin: %s, a shared GPU %s.NAME or a MIG profile nvidia.com/mig-PROFILE",
			p.GPUResource, tfjob.GPUResource, tfjob.GPUResource)
	}
	if ptr.Deref(p.GPUs, 0) <= 0 {
		return fmt.Errorf("--gpu-resource %s: no replica asks for GPUs; add --gpus", p.GPUResource)
	}
	if p.DeviceClass != "" {
		return fmt.Errorf("--gpu-resource %s: not with --device-class, which asks for the GPUs by a claim instead", p.GPUResource)
	}
	v.GPUResource = corev1.ResourceName(p.GPUResource)
	return nil
}

// gpuResource is the resource --gpus counts.
func (v Values) gpuResource() corev1.ResourceName {
	if v.GPUResource != "" {
		return v.GPUResource
	}
	return tfjob.GPUResource
}

// setGPUs sets the container's --gpus limit of the resource --gpu-resource names (a
// device plugin's resources are limits: the request follows), or removes it for 0.
// The manifest's other GPU resources go: a pod would wait for both.
func setGPUs(c *corev1.Container, v Values) {
	res := v.gpuResource()
	removeGPUResources(c, res)
	if *v.GPUs == 0 {
		delete(c.Resources.Limits, res)
		delete(c.Resources.Requests, res)
		return
	}
	setResource(c, res, resource.NewQuantity(*v.GPUs, resource.DecimalSI), false)
}

// removeGPUResources removes from the container's limits and requests every GPU
// resource but keep.
func removeGPUResources(c *corev1.Container, keep corev1.ResourceName) {
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name := range list {
			if name != keep && tfjob.IsGPU(name) {
				delete(list, name)
			}
		}
	}
}

// asksForGPUs says whether a replica's pod asks for nvidia.com/gpu or the resource
// --gpu-resource names.
func asksForGPUs(spec *corev1.PodSpec, v Values) bool {
	if tfjob.PodGPUs(spec) > 0 {
		return true
	}
	c := tfjob.TensorFlowContainer(spec.Containers)
	if c == nil {
		return false
	}
	q, ok := c.Resources.Limits[v.gpuResource()]
	return ok && !q.IsZero()
}

// defaultImages gives every replica without an image the CUDA image when the job asks
// for GPUs: a job run with --gpus and no --image then sees its GPUs (the CPU image
// cannot). The parameter servers, which get no GPU, get the CPU image: the same
// TensorFlow without CUDA's 3.6 GB.
func defaultImages(job *tfv1.TFJob, v Values) {
	if ptr.Deref(v.GPUs, 0) <= 0 {
		return
	}
	for rt, spec := range job.Spec.TFReplicaSpecs {
		if spec == nil {
			continue
		}
		if c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers); c != nil && c.Image == "" {
			c.Image = images.TensorFlowGPU
			if rt == tfv1.ReplicaTypePS {
				c.Image = images.TensorFlow
			}
		}
	}
}

// gpuResourceOf reads --gpu-resource back: the first GPU resource (tfjob.IsGPU) other
// than nvidia.com/gpu among the limits of a replica that is not a parameter server.
// Another of NVIDIA's resources, a network device, stays the manifest's own.
func gpuResourceOf(v view, p *Params) {
	for _, rt := range tfv1.ReplicaTypes {
		spec := v.job.Spec.TFReplicaSpecs[rt]
		if spec == nil || rt == tfv1.ReplicaTypePS {
			continue
		}
		c := tfjob.TensorFlowContainer(spec.Template.Spec.Containers)
		if c == nil {
			return
		}
		names := make([]corev1.ResourceName, 0, len(c.Resources.Limits))
		for name := range c.Resources.Limits {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if tfjob.IsGPU(name) && name != tfjob.GPUResource {
				q := c.Resources.Limits[name]
				p.GPUResource, p.GPUs = string(name), ptr.To(q.Value())
				return
			}
		}
		return
	}
}
