package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The record pod's bounds: it gets maxRecordRestarts restarts (the kubelet's backoff
// puts 10 s, then 20 s between them), and recordTimeout from its creation in all, after
// which the job goes without its end record rather than wait on it forever.
const (
	maxRecordRestarts = 2
	recordTimeout     = 5 * time.Minute
	// recordConfigGrace is how long the record pod may fail to start its container for
	// its configuration (most often the storage Secret it reads is gone: a user's
	// --storage-secret deleted) before it is given up on; a Secret created a moment late
	// gets the time to appear.
	recordConfigGrace = 30 * time.Second
)

// recordPlan is what to do about a finished job's end record.
type recordPlan struct {
	// create starts the record pod.
	create bool
	// remove deletes the record pod, once its outcome is in the status.
	remove *corev1.Pod
	// condition, if set, goes into the status: EndRecorded True or False.
	condition *metav1.Condition
	// hold keeps the job past its TTL: its end is not recorded yet.
	hold bool
	// requeue is when to look again at a record pod that has not ended.
	requeue time.Duration
}

// needsRecord reports whether a job has an end to record: it finished, and stores in S3
// with credentials its pods read from a Secret.
func needsRecord(job *tfv1.TFJob, st *tfv1.TFJobStatus) bool {
	return jobFinished(st) && job.Spec.Artifacts != nil && job.Spec.Storage != nil && job.UID != ""
}

// decideRecord decides the end record of a job from its status and its record pod
// (nil if none), without a write.
func decideRecord(job *tfv1.TFJob, st *tfv1.TFJobStatus, pod *corev1.Pod, now time.Time) recordPlan {
	if !needsRecord(job, st) {
		return recordPlan{remove: pod}
	}
	if meta.FindStatusCondition(st.Conditions, string(tfv1.JobEndRecorded)) != nil {
		return recordPlan{remove: pod}
	}
	switch {
	case pod == nil:
		return recordPlan{create: true, hold: true}
	case pod.Status.Phase == corev1.PodSucceeded:
		return recordPlan{remove: pod, condition: &metav1.Condition{Type: string(tfv1.JobEndRecorded), Status: metav1.ConditionTrue,
			Reason: tfv1.ReasonEndRecorded, Message: "the run's end.json is written"}}
	}
	if why := recordGaveUp(pod, now); why != "" {
		return recordPlan{remove: pod, condition: &metav1.Condition{Type: string(tfv1.JobEndRecorded), Status: metav1.ConditionFalse,
			Reason: tfv1.ReasonEndNotRecorded, Message: "the run's end was not recorded: " + why}}
	}
	next := pod.CreationTimestamp.Add(recordTimeout)
	if now.Before(pod.CreationTimestamp.Add(recordConfigGrace)) {
		next = pod.CreationTimestamp.Add(recordConfigGrace)
	}
	return recordPlan{hold: true, requeue: max(time.Second, next.Sub(now))}
}

// recordGaveUp says why the record pod is given up on: it failed, exited non-zero
// after its last restart, could not start its container for recordConfigGrace (the
// kubelet's reason, such as a Secret not found, is the message), or has not succeeded
// in recordTimeout; "" while it may still.
func recordGaveUp(pod *corev1.Pod, now time.Time) string {
	if pod.Status.Phase == corev1.PodFailed {
		return "pod " + pod.Name + " failed: " + pod.Status.Message
	}
	age := now.Sub(pod.CreationTimestamp.Time)
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && w.Reason == "CreateContainerConfigError" && age >= recordConfigGrace {
			return fmt.Sprintf("pod %s cannot start: %s", pod.Name, w.Message)
		}
		if t := c.State.Terminated; t != nil && t.ExitCode != 0 && c.RestartCount >= maxRecordRestarts {
			return fmt.Sprintf("pod %s exited %d after %d restarts (its log says why)", pod.Name, t.ExitCode, c.RestartCount)
		}
		if t := c.LastTerminationState.Terminated; t != nil && c.State.Running == nil && c.RestartCount >= maxRecordRestarts {
			return fmt.Sprintf("pod %s exited %d after %d restarts (its log says why)", pod.Name, t.ExitCode, c.RestartCount)
		}
	}
	if !pod.CreationTimestamp.IsZero() && age >= recordTimeout {
		return fmt.Sprintf("pod %s did not succeed within %v", pod.Name, recordTimeout)
	}
	return ""
}

// isRecordPod reports whether a pod of the job is its record pod, not a replica.
func isRecordPod(pod *corev1.Pod) bool {
	return pod.Labels[tfjob.LabelRecord] != ""
}

// actOnRecord creates the record pod, or deletes it once its outcome is in the status
// (the status is written before), announcing an end not recorded.
func (r *TFJobReconciler) actOnRecord(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus, rp recordPlan) error {
	if c := rp.condition; c != nil && c.Status == metav1.ConditionFalse {
		r.event(job, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
	}
	switch {
	case rp.create:
		log.FromContext(ctx).V(2).Info("Creating the record pod", "pod", tfjob.RecordPodName(job.Name))
		err := r.Create(ctx, build.RecordPod(job, st, r.PodOptions))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating pod %s: %w", tfjob.RecordPodName(job.Name), err)
		}
	case rp.remove != nil && rp.remove.DeletionTimestamp == nil:
		err := r.Delete(ctx, rp.remove, client.Preconditions{UID: &rp.remove.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", rp.remove.Name, err)
		}
	}
	return nil
}

// setCondition puts the decided EndRecorded condition, if any, into the status.
func (rp recordPlan) setCondition(st *tfv1.TFJobStatus, now metav1.Time) {
	if c := rp.condition; c != nil {
		setCondition(st, tfv1.JobEndRecorded, c.Status, c.Reason, c.Message, now)
	}
}

// finish releases the finished pods whose outcomes are recorded, acts on the end
// record, then deletes the job once its TTL after finishing has passed, unless its end
// is still being recorded; it returns when to look again.
func (r *TFJobReconciler) finish(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus, release []*corev1.Pod, rp recordPlan, now time.Time) (time.Duration, error) {
	err := errors.Join(r.releasePods(ctx, release), r.actOnRecord(ctx, job, st, rp))
	if err != nil || rp.hold {
		return rp.requeue, err
	}
	return r.deleteExpired(ctx, job, st, now)
}
