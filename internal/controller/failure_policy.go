package controller

import (
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// The policies that fail a job: a replica that training needs failed for good, or the
// replicas restarted more often than runPolicy.backoffLimit allows. (The deadline is
// deadline_policy.go's.)

// permanentFailure reports whether a replica that training needs (chief, master, PS or
// worker) failed for good, and describes the first such failure. A failed evaluator does
// not fail the job.
func permanentFailure(o *observation) (bool, string) {
	for _, f := range o.failures {
		if f.rt != tfv1.ReplicaTypeEvaluator {
			return true, describeFailure(f.rt, *f.failure)
		}
	}
	return false, ""
}

// totalRestarts is the number of restarts of the job's replicas, all types together.
func totalRestarts(status *tfv1.TFJobStatus) int32 {
	var n int32
	for _, rs := range status.ReplicaStatuses {
		n += rs.Restarts
	}
	return n
}

// backoffLimitExceeded reports whether the replicas restarted more often than
// runPolicy.backoffLimit allows.
func backoffLimitExceeded(job *tfv1.TFJob, status *tfv1.TFJobStatus) bool {
	limit := job.Spec.RunPolicy.BackoffLimit
	return limit != nil && totalRestarts(status) > *limit
}
