package controller

import (
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// deadlineExceeded reports whether the job has been running longer than
// runPolicy.activeDeadlineSeconds, and otherwise how long until it will have (0 when
// it has no deadline). The clock starts at status.startTime, which a suspension resets.
func deadlineExceeded(job *tfv1.TFJob, st *tfv1.TFJobStatus, now time.Time) (bool, time.Duration) {
	deadline := job.Spec.RunPolicy.ActiveDeadlineSeconds
	if deadline == nil || st.StartTime == nil {
		return false, 0
	}
	left := st.StartTime.Add(time.Duration(*deadline) * time.Second).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}
