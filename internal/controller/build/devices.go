package build

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

const (
	// DeviceClaimName is the pod's claim made from a replica type's deviceClaim, and
	// the name its TensorFlow container refers to it by. The prefix keeps it apart from
	// the template's own resourceClaims.
	DeviceClaimName = "tfk8s-devices"
	// DeviceRequestName is the one request of the claim: the driver's environment and
	// CDI devices name it.
	DeviceRequestName = "devices"
)

// DeviceClaimTemplateName is the ResourceClaimTemplate of a job's replica type.
func DeviceClaimTemplateName(job string, rt tfv1.ReplicaType) string {
	return job + "-" + tfjob.TaskType(rt) + "-devices"
}

// DeviceClaimTemplate builds the ResourceClaimTemplate of one replica type: owned by
// the job, so garbage collection deletes it, and the claims made from it, with the job.
// Each pod gets a claim of its own from it, so no two replicas share a device.
func DeviceClaimTemplate(job *tfv1.TFJob, rt tfv1.ReplicaType, dc *tfv1.DeviceClaim) *resourcev1.ResourceClaimTemplate {
	var selectors []resourcev1.DeviceSelector
	for _, expr := range dc.Selectors {
		selectors = append(selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}})
	}
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{
			Name:            DeviceClaimTemplateName(job.Name, rt),
			Namespace:       job.Namespace,
			Labels:          ReplicaLabels(job.Name, rt),
			OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
		},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			// The claims carry the replica's labels, so kubectl finds a job's claims.
			ObjectMeta: metav1.ObjectMeta{Labels: ReplicaLabels(job.Name, rt)},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
				Requests: []resourcev1.DeviceRequest{{
					Name: DeviceRequestName,
					Exactly: &resourcev1.ExactDeviceRequest{
						DeviceClassName: dc.DeviceClassName,
						Selectors:       selectors,
						AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
						Count:           ptr.Deref(dc.Count, 1),
					},
				}},
			}},
		},
	}
}

// addDeviceClaim gives the pod of a replica type that asks for devices its claim from
// the type's template, used by the TensorFlow container c.
func addDeviceClaim(job *tfv1.TFJob, rt tfv1.ReplicaType, spec *corev1.PodSpec, c *corev1.Container) {
	if rs := job.Spec.TFReplicaSpecs[rt]; rs == nil || rs.DeviceClaim == nil {
		return
	}
	spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{
		Name:                      DeviceClaimName,
		ResourceClaimTemplateName: ptr.To(DeviceClaimTemplateName(job.Name, rt)),
	})
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: DeviceClaimName})
}
