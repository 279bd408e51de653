package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// The job's state machine: from the status observe counted and the job's policies, the
// job's conditions. Pure: the job, the observation and the time in, the conditions out.
//
//	(none) ──▶ Created ──▶ Running ◀──▶ Restarting
//	              │            │
//	              ▼            ▼
//	          Suspended    Succeeded | Failed   (final: never taken back)
//
// Failed comes first: a deadline passed, a replica failed for good, the backoff limit
// exceeded; then Succeeded, by the success policy.

// updateConditions sets the job's conditions in o.status, and returns when to look
// again (for a deadline), or 0.
func updateConditions(job *tfv1.TFJob, o *observation, now metav1.Time) time.Duration {
	st := o.status
	if !isConditionTrue(st, tfv1.JobCreated) {
		setCondition(st, tfv1.JobCreated, metav1.ConditionTrue, tfv1.ReasonCreated,
			fmt.Sprintf(tfv1.MessageCreated, job.Namespace, job.Name), now)
	}
	if jobFinished(st) {
		return 0
	}
	if jobSuspended(job) {
		if !isConditionTrue(st, tfv1.JobSuspended) {
			setCondition(st, tfv1.JobSuspended, metav1.ConditionTrue, tfv1.ReasonSuspended, tfv1.MessageSuspended, now)
			setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonSuspended, tfv1.MessageSuspended, now)
		}
		// The deadline counts running time only: it starts again on resume.
		st.StartTime = nil
		return 0
	}
	if isConditionTrue(st, tfv1.JobSuspended) {
		setCondition(st, tfv1.JobSuspended, metav1.ConditionFalse, tfv1.ReasonResumed, tfv1.MessageResumed, now)
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}
	typ, reason, msg, left := jobVerdict(job, o, now)
	if typ != "" {
		finish(st, typ, reason, msg, now)
		return 0
	}
	updateProgress(job, o, now)
	return left
}

// jobVerdict decides whether the job has ended: the final condition, its reason and
// message; else "" and how long until its deadline, if it has one.
func jobVerdict(job *tfv1.TFJob, o *observation, now metav1.Time) (typ tfv1.JobState, reason, msg string, left time.Duration) {
	st := o.status
	exceeded, left := deadlineExceeded(job, st, now.Time)
	if exceeded {
		return tfv1.JobFailed, tfv1.ReasonDeadlineExceeded,
			fmt.Sprintf(tfv1.MessageDeadlineExceeded, *job.Spec.RunPolicy.ActiveDeadlineSeconds), 0
	}
	if failed, msg := permanentFailure(o); failed {
		return tfv1.JobFailed, tfv1.ReasonFailed, msg, 0
	}
	if backoffLimitExceeded(job, st) {
		msg := fmt.Sprintf(tfv1.MessageBackoffLimitExceeded, totalRestarts(st), *job.Spec.RunPolicy.BackoffLimit)
		if f := lastFailure(st); f != nil {
			msg += "; last: " + describeFailure(f.rt, *f.failure)
		}
		return tfv1.JobFailed, tfv1.ReasonBackoffLimitExceeded, msg, 0
	}
	if ok, msg := successPolicyMet(job, st); ok {
		return tfv1.JobSucceeded, tfv1.ReasonSucceeded, msg, 0
	}
	return "", "", "", left
}

// updateProgress sets Restarting while failed replicas come back, and Running once
// every replica runs.
func updateProgress(job *tfv1.TFJob, o *observation, now metav1.Time) {
	st := o.status
	if o.restarted > 0 {
		msg := fmt.Sprintf(tfv1.MessageRestarting, job.Namespace, job.Name, o.restarted)
		setCondition(st, tfv1.JobRestarting, metav1.ConditionTrue, tfv1.ReasonRestarting, msg, now)
		setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonRestarting, msg, now)
		return
	}
	if len(o.disrupted) > 0 {
		msg := fmt.Sprintf(tfv1.MessageDisrupted, job.Namespace, job.Name, len(o.disrupted))
		setCondition(st, tfv1.JobRestarting, metav1.ConditionTrue, tfv1.ReasonDisrupted, msg, now)
		setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonDisrupted, msg, now)
		return
	}
	if !allReplicasRunning(job, o, typesOf(job)) {
		return
	}
	if !isConditionTrue(st, tfv1.JobRunning) {
		setCondition(st, tfv1.JobRunning, metav1.ConditionTrue, tfv1.ReasonRunning,
			fmt.Sprintf(tfv1.MessageRunning, job.Namespace, job.Name), now)
	}
	if isConditionTrue(st, tfv1.JobRestarting) {
		setCondition(st, tfv1.JobRestarting, metav1.ConditionFalse, tfv1.ReasonRunning, tfv1.MessageRunningAgain, now)
	}
}

// finish sets the job's final condition. It is never taken back.
func finish(st *tfv1.TFJobStatus, typ tfv1.JobState, reason, msg string, now metav1.Time) {
	setCondition(st, typ, metav1.ConditionTrue, reason, msg, now)
	setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, reason, msg, now)
	if isConditionTrue(st, tfv1.JobRestarting) {
		setCondition(st, tfv1.JobRestarting, metav1.ConditionFalse, reason, msg, now)
	}
	st.CompletionTime = &now
}

// typesOf returns the replica types of the job, in tfk8s's order.
func typesOf(job *tfv1.TFJob) []tfv1.ReplicaType {
	var out []tfv1.ReplicaType
	for _, rt := range tfv1.ReplicaTypes {
		if job.Spec.TFReplicaSpecs[rt] != nil {
			out = append(out, rt)
		}
	}
	return out
}

type typedFailure struct {
	rt      tfv1.ReplicaType
	failure *tfv1.ReplicaFailure
}

// lastFailure is the newest failure of any replica type.
func lastFailure(st *tfv1.TFJobStatus) *typedFailure {
	var last *typedFailure
	for _, rt := range tfv1.ReplicaTypes {
		rs := st.ReplicaStatuses[rt]
		if rs == nil || rs.LastFailure == nil {
			continue
		}
		if last == nil || last.failure.Time.Before(&rs.LastFailure.Time) {
			last = &typedFailure{rt, rs.LastFailure}
		}
	}
	return last
}
