package controller

import (
	"fmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// announce emits an event, and updates the metrics, for every change the status just
// written made to the job's conditions, and for the failures and restarts it counted.
// Deriving them from the written status, not from the decisions, announces each
// transition once, however many reconciles it took to write it.
func (r *TFJobReconciler) announce(job *tfv1.TFJob, o *observation, now metav1.Time) {
	before, after := &job.Status, o.status
	became := func(typ tfv1.JobState) bool { return isConditionTrue(after, typ) && !isConditionTrue(before, typ) }
	reasonOf := func(typ tfv1.JobState) (string, string) {
		for _, c := range after.Conditions {
			if c.Type == string(typ) {
				return c.Reason, c.Message
			}
		}
		return "", ""
	}

	if became(tfv1.JobCreated) {
		recordJobCreated(job)
	}
	r.recordReplicaMetrics(job, o, now)
	for _, f := range o.failures {
		if f.rt == tfv1.ReplicaTypeEvaluator {
			r.event(job, corev1.EventTypeWarning, tfv1.ReasonEvaluatorFailed, "%s; training goes on", describeFailure(f.rt, *f.failure))
		}
	}
	if became(tfv1.JobSuspended) {
		reason, msg := reasonOf(tfv1.JobSuspended)
		r.event(job, corev1.EventTypeNormal, reason, "%s", msg)
	}
	for _, pod := range o.disrupted {
		r.event(job, corev1.EventTypeWarning, tfv1.ReasonDisrupted, "%s", describeDisruption(pod))
	}
	if isConditionTrue(before, tfv1.JobSuspended) && !isConditionTrue(after, tfv1.JobSuspended) {
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonResumed, tfv1.MessageResumed)
	}
	if reason, msg := reasonOf(tfv1.JobRestarting); reason == tfv1.ReasonRestarting &&
		(became(tfv1.JobRestarting) || (o.restarted > 0 && isConditionTrue(after, tfv1.JobRestarting))) {
		r.event(job, corev1.EventTypeWarning, tfv1.ReasonRestarting, "%s", msg)
		recordRestarts(job, o.restarted)
	}
	if became(tfv1.JobRunning) {
		if findCondition(before, tfv1.JobRunning) == nil {
			recordJobStartup(now.Sub(job.CreationTimestamp.Time))
		}
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonRunning, "every replica is running")
	}
	for _, typ := range []tfv1.JobState{tfv1.JobSucceeded, tfv1.JobFailed} {
		if !became(typ) {
			continue
		}
		reason, msg := reasonOf(typ)
		if typ == tfv1.JobFailed {
			recordJobFailed(job)
			r.event(job, corev1.EventTypeWarning, reason, "%s", msg)
		} else {
			recordJobSucceeded(job)
			r.event(job, corev1.EventTypeNormal, reason, "%s", msg)
		}
	}
	r.announceIgnoredFields(job, before, after)
	r.announceWaits(job, before, after, o.waits)
}

// findCondition returns the condition of type typ, or nil.
func findCondition(st *tfv1.TFJobStatus, typ tfv1.JobState) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == string(typ) {
			return &st.Conditions[i]
		}
	}
	return nil
}

// jobEvent is an event on the job that an act step gathered, emitted once the status
// is written.
type jobEvent struct {
	eventType, reason, message string
}

// newJobEvent formats a jobEvent.
func newJobEvent(eventType, reason, format string, args ...any) jobEvent {
	return jobEvent{eventType: eventType, reason: reason, message: fmt.Sprintf(format, args...)}
}

// emit records the gathered events on the job.
func (r *TFJobReconciler) emit(job *tfv1.TFJob, events []jobEvent) {
	for _, e := range events {
		r.event(job, e.eventType, e.reason, "%s", e.message)
	}
}

// warnings are the events of type Warning.
func warnings(events []jobEvent) []jobEvent {
	var out []jobEvent
	for _, e := range events {
		if e.eventType == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

// event records an event on the job; unit tests run the reconciler without a recorder.
func (r *TFJobReconciler) event(job *tfv1.TFJob, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(job, nil, eventType, reason, reason, format, args...)
	}
}
