package testutil

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// PodWrapper builds a pod of a TFJob replica, as the kubelet would report it.
type PodWrapper struct{ corev1.Pod }

// MakePod starts a Pending pod of replica index of type rt of job: named
// <job>-<type>-<index>, labelled as the controller labels it, with UID "<name>-uid" and
// one "tensorflow" container.
func MakePod(job, namespace string, rt tfv1.ReplicaType, index int32) *PodWrapper {
	name := tfjob.PodName(job, rt, index)
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			UID:       types.UID(name + "-uid"),
			Labels: map[string]string{
				tfv1.LabelJobName:      job,
				tfv1.LabelReplicaType:  tfjob.TaskType(rt),
				tfv1.LabelReplicaIndex: strconv.Itoa(int(index)),
			},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: tfjob.ContainerName, Image: "tensorflow/tensorflow:2.16.1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Obj returns the pod built so far.
func (w *PodWrapper) Obj() *corev1.Pod { return w.Pod.DeepCopy() }

// UID sets the pod's UID, for a pod re-created under the same name.
func (w *PodWrapper) UID(uid types.UID) *PodWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Phase sets the pod's phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper {
	w.Status.Phase = p
	return w
}

// Reason sets the pod's status reason, e.g. "Evicted".
func (w *PodWrapper) Reason(reason string) *PodWrapper {
	w.Status.Reason = reason
	return w
}

// Finalizer adds the controller's tracking finalizer.
func (w *PodWrapper) Finalizer() *PodWrapper {
	w.Finalizers = append(w.Finalizers, tfv1.TrackingFinalizer)
	return w
}

// Deleting marks the pod as being deleted.
func (w *PodWrapper) Deleting() *PodWrapper {
	w.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return w
}

// ExitCode says the tensorflow container terminated with code, with the reason the
// kubelet gives: "Completed" for 0, else "Error".
func (w *PodWrapper) ExitCode(code int32) *PodWrapper {
	reason := "Error"
	if code == 0 {
		reason = "Completed"
	}
	w.tensorflowStatus().State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	return w
}

// RestartCount sets how many times the kubelet restarted the tensorflow container.
func (w *PodWrapper) RestartCount(n int32) *PodWrapper {
	w.tensorflowStatus().RestartCount = n
	return w
}

// Condition sets a true pod condition, e.g. corev1.DisruptionTarget.
func (w *PodWrapper) Condition(t corev1.PodConditionType) *PodWrapper {
	w.Status.Conditions = append(w.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	return w
}

// tensorflowStatus is the status of the tensorflow container, added if missing.
func (w *PodWrapper) tensorflowStatus() *corev1.ContainerStatus {
	for i := range w.Status.ContainerStatuses {
		if w.Status.ContainerStatuses[i].Name == tfjob.ContainerName {
			return &w.Status.ContainerStatuses[i]
		}
	}
	w.Status.ContainerStatuses = append(w.Status.ContainerStatuses, corev1.ContainerStatus{Name: tfjob.ContainerName})
	return &w.Status.ContainerStatuses[len(w.Status.ContainerStatuses)-1]
}

// Waiting sets the tensorflow container waiting, as the kubelet says it, for reason
// (ErrImagePull...) with message, with the image of the container's spec.
func (w *PodWrapper) Waiting(reason, message string) *PodWrapper {
	s := w.tensorflowStatus()
	s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	if c := tfjob.TensorFlowContainer(w.Spec.Containers); c != nil {
		s.Image = c.Image
	}
	return w
}
