// Package testutil builds TFJobs for tests with fluent wrappers, and gives integration
// tests a namespace of their own on a real control plane.
package testutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TFJobWrapper builds a TFJob.
type TFJobWrapper struct{ tfv1.TFJob }

// MakeTFJob starts a TFJob with no replicas.
func MakeTFJob(name, namespace string) *TFJobWrapper {
	return &TFJobWrapper{tfv1.TFJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: tfv1.GroupVersion.String(), Kind: "TFJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{}},
	}}
}

// Obj returns the TFJob built so far.
func (w *TFJobWrapper) Obj() *tfv1.TFJob { return w.TFJob.DeepCopy() }

// Replicas sets n replicas of type rt, each with a "tensorflow" container running python3.
func (w *TFJobWrapper) Replicas(rt tfv1.ReplicaType, n int32) *TFJobWrapper {
	w.Spec.TFReplicaSpecs[rt] = &tfv1.ReplicaSpec{
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:    "tensorflow",
			Image:   "tensorflow/tensorflow:2.16.1",
			Command: []string{"python3", "train.py"},
		}}}},
	}
	return w
}

// Chief adds one chief.
func (w *TFJobWrapper) Chief() *TFJobWrapper { return w.Replicas(tfv1.ReplicaTypeChief, 1) }

// Master adds one master.
func (w *TFJobWrapper) Master() *TFJobWrapper { return w.Replicas(tfv1.ReplicaTypeMaster, 1) }

// Evaluator adds one evaluator.
func (w *TFJobWrapper) Evaluator() *TFJobWrapper { return w.Replicas(tfv1.ReplicaTypeEvaluator, 1) }

// PS adds n parameter servers.
func (w *TFJobWrapper) PS(n int32) *TFJobWrapper { return w.Replicas(tfv1.ReplicaTypePS, n) }

// Workers adds n workers.
func (w *TFJobWrapper) Workers(n int32) *TFJobWrapper { return w.Replicas(tfv1.ReplicaTypeWorker, n) }

// RestartPolicy sets the restart policy of replica type rt, which must exist.
func (w *TFJobWrapper) RestartPolicy(rt tfv1.ReplicaType, p tfv1.RestartPolicy) *TFJobWrapper {
	w.Spec.TFReplicaSpecs[rt].RestartPolicy = p
	return w
}

// Port names the tensorflow container's port "tfjob-port" on every replica type.
func (w *TFJobWrapper) Port(port int32) *TFJobWrapper {
	for _, rs := range w.Spec.TFReplicaSpecs {
		c := &rs.Template.Spec.Containers[0]
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "tfjob-port", ContainerPort: port})
	}
	return w
}

// CleanPodPolicy sets runPolicy.cleanPodPolicy.
func (w *TFJobWrapper) CleanPodPolicy(p tfv1.CleanPodPolicy) *TFJobWrapper {
	w.Spec.RunPolicy.CleanPodPolicy = &p
	return w
}

// BackoffLimit sets runPolicy.backoffLimit.
func (w *TFJobWrapper) BackoffLimit(n int32) *TFJobWrapper {
	w.Spec.RunPolicy.BackoffLimit = &n
	return w
}

// ActiveDeadlineSeconds sets runPolicy.activeDeadlineSeconds.
func (w *TFJobWrapper) ActiveDeadlineSeconds(s int64) *TFJobWrapper {
	w.Spec.RunPolicy.ActiveDeadlineSeconds = &s
	return w
}

// TTLSecondsAfterFinished sets runPolicy.ttlSecondsAfterFinished.
func (w *TFJobWrapper) TTLSecondsAfterFinished(s int32) *TFJobWrapper {
	w.Spec.RunPolicy.TTLSecondsAfterFinished = &s
	return w
}

// Suspend sets runPolicy.suspend.
func (w *TFJobWrapper) Suspend(s bool) *TFJobWrapper {
	w.Spec.RunPolicy.Suspend = &s
	return w
}

// SuccessPolicy sets spec.successPolicy.
func (w *TFJobWrapper) SuccessPolicy(p tfv1.SuccessPolicy) *TFJobWrapper {
	w.Spec.SuccessPolicy = &p
	return w
}

// StartupPolicy sets spec.startupPolicy.
func (w *TFJobWrapper) StartupPolicy(p tfv1.StartupPolicy) *TFJobWrapper {
	w.Spec.StartupPolicy = p
	return w
}

// HostNetwork sets spec.networking.mode to HostNetwork.
func (w *TFJobWrapper) HostNetwork() *TFJobWrapper {
	w.Spec.Networking.Mode = tfv1.NetworkingModeHostNetwork
	return w
}

// Code sets spec.code and the storage secret it needs.
func (w *TFJobWrapper) Code(source string) *TFJobWrapper {
	w.Spec.Code = &tfv1.Code{Source: source}
	w.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}}
	return w
}

// Artifacts sets spec.artifacts and the storage secret it needs.
func (w *TFJobWrapper) Artifacts(destination string, paths ...string) *TFJobWrapper {
	w.Spec.Artifacts = &tfv1.Artifacts{Destination: destination, Paths: paths}
	w.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}}
	return w
}

// UID sets the job's UID, which owner references and host port offsets derive from.
func (w *TFJobWrapper) UID(uid string) *TFJobWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// DynamicWorker sets spec.enableDynamicWorker.
func (w *TFJobWrapper) DynamicWorker() *TFJobWrapper {
	w.Spec.EnableDynamicWorker = true
	return w
}
