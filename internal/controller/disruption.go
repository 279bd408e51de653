package controller

import (
	"cmp"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A disruption is a pod removed by something other than its program: the scheduler
// preempting it for a pod of higher priority, the Eviction API (a node drain, Kueue),
// the taint manager, the kubelet under node pressure or at shutdown, a gang scheduler
// taking back a partial gang, or anyone deleting a pod not yet bound to a node. The
// replica is re-created at once and the disruption is counted apart from restarts, so a
// job with backoffLimit 0 survives a preemption, as Kubernetes Jobs do with a
// podFailurePolicy that ignores DisruptionTarget.

// disruptionReasons are the pod reasons the kubelet and the scheduler give a pod that
// was disrupted rather than failed by its own program (set by kubelets that predate the
// DisruptionTarget condition, or beside it).
var disruptionReasons = map[string]bool{
	"Evicted":                  true,
	"Preempting":               true,
	"NodeLost":                 true,
	"Shutdown":                 true,
	"Terminated":               true,
	"NodeShutdown":             true,
	"UnexpectedAdmissionError": true,
}

// reasonDeletedUnbound names the disruption of a pod deleted before it was bound.
const reasonDeletedUnbound = "DeletedBeforeBinding"

// disruption says why a pod was disrupted (its DisruptionTarget condition's reason,
// such as PreemptionByScheduler or EvictionByEvictionAPI, else its pod reason, else
// DeletedBeforeBinding), or "" when it was not: it failed by itself, or was deleted
// while running with nothing saying why.
func disruption(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return cmp.Or(c.Reason, string(corev1.DisruptionTarget))
		}
	}
	if disruptionReasons[pod.Status.Reason] && !overOwnStorageLimit(pod) {
		return pod.Status.Reason
	}
	if pod.DeletionTimestamp != nil && pod.Spec.NodeName == "" && pod.Status.Phase == corev1.PodPending {
		// Nothing of the program ran: a gang scheduler's or a user's deletion of a
		// waiting pod costs the job nothing but the wait.
		return reasonDeletedUnbound
	}
	return ""
}

// storageLimitMessages begin or end the kubelet's messages for a pod evicted for
// passing its own storage limits: an emptyDir's sizeLimit, a container's or the pod's
// ephemeral-storage limit (k8s.io/kubernetes pkg/kubelet/eviction, helpers.go).
var storageLimitMessages = []string{"exceeds the limit", "exceeded its local ephemeral storage limit", "exceeds the total limit of containers"}

// overOwnStorageLimit reports whether the kubelet evicted the pod for writing more than
// its own limits. That is the program's failure, counted like any other: re-created as
// a disruption, an archive of zeros would be fetched and evicted for ever.
func overOwnStorageLimit(pod *corev1.Pod) bool {
	if pod.Status.Reason != "Evicted" {
		return false
	}
	for _, m := range storageLimitMessages {
		if strings.Contains(pod.Status.Message, m) {
			return true
		}
	}
	return false
}

// isDisruption reports whether a failed or deleted pod was disrupted.
func isDisruption(pod *corev1.Pod) bool { return disruption(pod) != "" }

// describeDisruption says in a sentence what happened to a disrupted pod, for its event.
func describeDisruption(pod *corev1.Pod) string {
	msg := fmt.Sprintf("pod %s was disrupted (%s)", pod.Name, disruption(pod))
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Message != "" {
			msg += ": " + c.Message
			break
		}
	}
	if pod.Status.Message != "" && pod.Status.Phase == corev1.PodFailed {
		msg += ": " + pod.Status.Message
	}
	return truncate(msg + "; re-creating it, not counted against backoffLimit")
}
