package controller

import (
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// A failed replica is re-created after a delay that doubles with each failure in a row,
// as the Kubernetes Job controller does: a bad credential or a crashing program then
// costs the cluster a pod every few minutes, not a pod a second. A replica that ran for
// retryBackoffReset before it failed starts again from the shortest delay.
const (
	DefaultRetryBackoff = 10 * time.Second
	retryBackoffMax     = 6 * time.Minute
	retryBackoffReset   = 10 * time.Minute
)

// retryDelay is the delay before re-creating a replica that failed n times in a row
// (n ≥ 1): base, doubling, at most retryBackoffMax.
func retryDelay(base time.Duration, n int32) time.Duration {
	return doublingDelay(base, retryBackoffMax, n)
}

// doublingDelay is the delay after the nth failure in a row (n ≥ 1): base, doubling,
// at most limit.
func doublingDelay(base, limit time.Duration, n int32) time.Duration {
	d := base
	for i := int32(1); i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// failuresInARow is how many times in a row the failed pod's replica has now failed:
// one more than before the pod, unless the pod ran for retryBackoffReset.
func failuresInARow(pod *corev1.Pod) int32 {
	if ranFor(pod) >= retryBackoffReset {
		return 1
	}
	before, _ := strconv.ParseInt(pod.Annotations[tfv1.AnnotationFailuresInARow], 10, 32)
	return int32(max(before, 0)) + 1
}

// ranFor is how long the pod's TensorFlow container ran in its last run.
func ranFor(pod *corev1.Pod) time.Duration {
	t := tfjob.Terminated(pod)
	if t == nil || t.StartedAt.IsZero() || t.FinishedAt.IsZero() {
		return 0
	}
	return t.FinishedAt.Sub(t.StartedAt.Time)
}

// failedAt is when the pod failed: its container's end, else the last change of its
// conditions, else its creation.
func failedAt(pod *corev1.Pod) time.Time {
	if t := tfjob.Terminated(pod); t != nil && !t.FinishedAt.IsZero() {
		return t.FinishedAt.Time
	}
	at := pod.CreationTimestamp.Time
	for _, c := range pod.Status.Conditions {
		if c.LastTransitionTime.After(at) {
			at = c.LastTransitionTime.Time
		}
	}
	return at
}

// retryDue reports whether the failed pod may be replaced now, and otherwise how long
// until it may.
func retryDue(pod *corev1.Pod, base time.Duration, now time.Time) (bool, time.Duration) {
	left := failedAt(pod).Add(retryDelay(base, failuresInARow(pod))).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// retryCounts carries a replica's failures in a row from the failed pod, deleted once
// its delay is over, to the pod that replaces it. Held in memory only for that moment:
// a controller restarted in between starts the replica's count again.
type retryCounts struct {
	m sync.Map // retryKey → int32
}

type retryKey struct {
	job     types.UID
	replica ReplicaKey
}

// remember records the failures in a row of the replica whose pod is being replaced.
func (c *retryCounts) remember(job types.UID, key ReplicaKey, n int32) {
	c.m.Store(retryKey{job, key}, n)
}

// take returns, and forgets, the failures in a row recorded for the replica.
func (c *retryCounts) take(job types.UID, key ReplicaKey) int32 {
	v, ok := c.m.LoadAndDelete(retryKey{job, key})
	if !ok {
		return 0
	}
	return v.(int32)
}
