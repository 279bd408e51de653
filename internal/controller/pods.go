package controller

import (
	"strconv"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// podKey returns the replica a pod of the job runs, read from its labels.
func podKey(pod *corev1.Pod) (ReplicaKey, bool) {
	var rt tfv1.ReplicaType
	for _, t := range tfv1.ReplicaTypes {
		if strings.ToLower(string(t)) == pod.Labels[tfv1.LabelReplicaType] {
			rt = t
		}
	}
	index, err := strconv.Atoi(pod.Labels[tfv1.LabelReplicaIndex])
	if rt == "" || err != nil || index < 0 {
		return ReplicaKey{}, false
	}
	return ReplicaKey{Type: rt, Index: int32(index)}, true
}

// hasFinalizer reports whether pod carries the tracking finalizer.
func hasFinalizer(pod *corev1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == tfv1.TrackingFinalizer {
			return true
		}
	}
	return false
}

// isTerminal reports whether a pod has finished, successfully or not.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// isActive reports whether a pod is pending or running and not being deleted.
func isActive(pod *corev1.Pod) bool {
	return !isTerminal(pod) && pod.DeletionTimestamp == nil
}
