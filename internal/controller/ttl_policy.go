package controller

import (
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// ttlExpired reports whether a finished job's runPolicy.ttlSecondsAfterFinished has
// passed, and otherwise how long until it does (0 when the job has no TTL).
func ttlExpired(job *tfv1.TFJob, now time.Time) (bool, time.Duration) {
	ttl := job.Spec.RunPolicy.TTLSecondsAfterFinished
	done := job.Status.CompletionTime
	if ttl == nil || done == nil {
		return false, 0
	}
	left := done.Add(time.Duration(*ttl) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}
