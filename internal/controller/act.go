package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The act steps on a job's pods carry out what decide planned, and return what the API
// server said for recordStart to write into the status; they decide nothing.

// actOnPods deletes the pods the plan removes, or runs the job. It returns what the
// API server said of a running job's writes, and when to look again, or 0.
func (r *TFJobReconciler) actOnPods(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod, p *plan) (startOutcome, time.Duration, error) {
	if p.start == nil {
		return startOutcome{}, 0, r.deletePods(ctx, job, p.remove)
	}
	return r.startJob(ctx, job, pods, p.start)
}

// startJob clears the pods an earlier job of the name left behind, replaces the failed
// pods whose delay is over, creates the gang's group, the claims and the missing pods,
// and then the Service. The gang's group comes before its pods: a job whose gang
// scheduler is not served gets no pods, which would wait for a group nobody places.
func (r *TFJobReconciler) startJob(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod, sp *startPlan) (startOutcome, time.Duration, error) {
	errs := []error{r.clearForeignPods(ctx, job, sp.foreign), r.replaceFailedPods(ctx, job, sp.retries)}
	requeue := sp.retryIn
	refused, err := r.ensureGang(ctx, job, pods)
	switch {
	case err != nil:
		return startOutcome{}, requeue, errors.Join(append(errs, err)...)
	case refused != "":
		return startOutcome{failReason: tfv1.ReasonGangSchedulerUnavailable, failMessage: refused}, 0, errors.Join(errs...)
	}
	out, wait, err := r.startPods(ctx, job, sp)
	requeue = minPositive(requeue, wait)
	errs = append(errs, err)
	if out.failReason != "" {
		return out, requeue, errors.Join(errs...)
	}
	if wait := r.serviceDeferral(job, pods); wait > 0 {
		return out, minPositive(requeue, wait), errors.Join(errs...)
	}
	takenBy, err := r.ensureService(ctx, job)
	if takenBy == "" && err == nil && build.ServicePerReplica(job) {
		takenBy, err = r.ensureReplicaServices(ctx, job)
	}
	if takenBy != "" {
		out.failReason, out.failMessage = tfv1.ReasonServiceNameTaken, takenBy
	}
	return out, requeue, errors.Join(append(errs, err)...)
}

// startPods creates the claims of the job's volumes and then its missing pods, placed
// on the flavors Kueue admitted them to. Nothing is sent while the delay after the API
// server's last refusal runs: it returns when that delay ends.
func (r *TFJobReconciler) startPods(ctx context.Context, job *tfv1.TFJob, sp *startPlan) (startOutcome, time.Duration, error) {
	if len(sp.missing) == 0 {
		return startOutcome{accepted: true}, 0, nil
	}
	if sp.err != nil {
		return startOutcome{}, 0, sp.err
	}
	if wait := r.refusals.wait(job, r.clock.Now()); wait > 0 {
		return startOutcome{}, wait, nil
	}
	if out, err := r.ensureDeviceClaims(ctx, job); out.failReason != "" || err != nil {
		return out, 0, err
	}
	invalid, err := r.ensureClaims(ctx, job)
	if invalid == "" && err == nil {
		invalid, err = r.checkNotebookClaims(ctx, job)
	}
	switch {
	case err != nil:
		return startOutcome{}, 0, err
	case invalid != "":
		return startOutcome{failReason: tfv1.ReasonInvalidVolume, failMessage: invalid}, 0, nil
	}
	if sp.admission != nil {
		if job, err = r.placedOnFlavors(ctx, job, sp.admission); err != nil {
			return startOutcome{}, 0, err
		}
	}
	return r.createMissingPods(ctx, job, sp)
}

// replaceFailedPods deletes the failed pods whose retry delay is over, so that they are
// created again, and says once for each counted failure when its replica comes back.
func (r *TFJobReconciler) replaceFailedPods(ctx context.Context, job *tfv1.TFJob, retries []retry) error {
	var due []*corev1.Pod
	for _, rt := range retries {
		pod := rt.pod
		if rt.failures == 0 {
			due = append(due, pod)
			continue
		}
		if hasFinalizer(pod) {
			// The failure is being counted: say once when the replica comes back.
			r.event(job, corev1.EventTypeNormal, tfv1.ReasonRetryBackoff,
				"pod %s failed (%s); re-creating it in %v (failure %d in a row)",
				pod.Name, exitSummary(pod), rt.left.Round(time.Second), rt.failures)
		}
		if rt.left > 0 {
			continue
		}
		if key, ok := podKey(pod); ok {
			r.retries.remember(job.UID, key, rt.failures)
		}
		due = append(due, pod)
	}
	return r.deletePods(ctx, job, due)
}

// exitSummary says how a failed pod ended, for an event.
func exitSummary(pod *corev1.Pod) string {
	if t := tfjob.Terminated(pod); t != nil {
		return fmt.Sprintf("exit code %d", t.ExitCode)
	}
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	return "no exit code"
}
