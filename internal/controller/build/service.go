package build

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Service builds the job's one headless Service. Every pod's hostname and
// subdomain put it at <pod>.<job>.<namespace>.svc; publishNotReadyAddresses makes the
// name resolve as soon as the pod has an IP, before TensorFlow listens.
func Service(job *tfv1.TFJob) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            job.Name,
			Namespace:       job.Namespace,
			Labels:          map[string]string{tfv1.LabelJobName: job.Name},
			OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
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
		if spec := job.Spec.TFReplicaSpecs[rt]; spec != nil && !slices.Contains(ports, ReplicaPort(job, rt)) {
			ports = append(ports, ReplicaPort(job, rt))
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

// ReplicaServices builds the Service of each replica, named and selecting as
// training-operator v1.9 did. They carry tfk8s's job-name label too, which brings them
// into the controller's cache; publishNotReadyAddresses makes a name resolve as soon as
// its pod has an IP, as the job's headless Service does.
func ReplicaServices(job *tfv1.TFJob) []*corev1.Service {
	var svcs []*corev1.Service
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		port := corev1.ServicePort{Name: tfjob.PortName, Port: ReplicaPort(job, rt), Protocol: corev1.ProtocolTCP}
		for i := range tfjob.Replicas(spec) {
			selector := map[string]string{
				kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName,
				kubeflowv1.LabelJobName:      job.Name,
				kubeflowv1.LabelReplicaType:  tfjob.TaskType(rt),
				kubeflowv1.LabelReplicaIndex: strconv.Itoa(int(i)),
			}
			labels := map[string]string{tfv1.LabelJobName: job.Name}
			for k, v := range selector {
				labels[k] = v
			}
			svcs = append(svcs, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{
					Name:            tfjob.PodName(job.Name, rt, i),
					Namespace:       job.Namespace,
					Labels:          labels,
					OwnerReferences: []metav1.OwnerReference{OwnerRef(job)},
				},
				Spec: corev1.ServiceSpec{
					ClusterIP:                corev1.ClusterIPNone,
					Selector:                 selector,
					Ports:                    []corev1.ServicePort{port},
					PublishNotReadyAddresses: true,
				},
			})
		}
	}
	return svcs
}
