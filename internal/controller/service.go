package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// constructService builds the job's one headless Service. Every pod's hostname and
// subdomain put it at <pod>.<job>.<namespace>.svc; publishNotReadyAddresses makes the
// name resolve as soon as the pod has an IP, before TensorFlow listens.
func constructService(job *tfv1.TFJob) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            job.Name,
			Namespace:       job.Namespace,
			Labels:          map[string]string{tfv1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{controllerRef(job)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{tfv1.LabelJobName: job.Name},
			PublishNotReadyAddresses: true,
		},
	}
	// HostNetwork replicas each listen on a port of their own; a port list would name
	// only one of them, so the Service has none and serves names alone.
	if job.Spec.Networking.Mode == tfv1.NetworkingModeHostNetwork {
		return svc
	}
	var ports []int32
	for _, rt := range tfv1.ReplicaTypes {
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil && !slices.Contains(ports, replicaPort(job, rt)) {
			ports = append(ports, replicaPort(job, rt))
		}
	}
	for i, p := range ports {
		name := tfjob.PortName
		if i > 0 {
			name = tfjob.PortName + "-" + string(rune('a'+i))
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: name, Port: p, Protocol: corev1.ProtocolTCP})
	}
	return svc
}
