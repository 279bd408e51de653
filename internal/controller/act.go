package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
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
	var events []jobEvent
	if len(sp.foreign) > 0 {
		events = append(events, foreignPodsEvent(job, sp.foreign))
	}
	events = append(events, retryEvents(sp.retries)...)
	if sp.gangRefused != "" {
		return startOutcome{failReason: tfv1.ReasonGangSchedulerUnavailable, failMessage: sp.gangRefused, events: events}, 0, errors.Join(errs...)
	}
	if err := r.createGang(ctx, sp.gangView, sp.gang); err != nil {
		return startOutcome{events: events}, requeue, errors.Join(append(errs, err)...)
	}
	out, wait, err := r.startPods(ctx, job, sp)
	out.events = append(events, out.events...)
	requeue = minPositive(requeue, wait)
	errs = append(errs, err)
	if out.failReason != "" {
		return out, requeue, errors.Join(errs...)
	}
	if wait := r.serviceDeferral(job, pods); wait > 0 {
		return out, minPositive(requeue, wait), errors.Join(errs...)
	}
	takenBy, err := r.syncServices(ctx, job, sp.services)
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
	if sp.holdFor > 0 {
		return startOutcome{}, sp.holdFor, nil
	}
	if sp.invalidDeviceClaim != "" {
		return invalidDeviceClaim("%s", sp.invalidDeviceClaim), 0, nil
	}
	if sp.deviceClaimWait > 0 {
		return startOutcome{}, sp.deviceClaimWait, nil
	}
	if out, err := r.createDeviceClaims(ctx, sp.deviceClaims); out.failReason != "" || err != nil {
		return out, 0, err
	}
	if sp.invalidVolume != "" {
		return startOutcome{failReason: tfv1.ReasonInvalidVolume, failMessage: sp.invalidVolume}, 0, nil
	}
	if err := r.createClaims(ctx, sp.claims); err != nil {
		return startOutcome{}, 0, err
	}
	if sp.admission != nil {
		job = placedOnFlavors(job, sp.admission, sp.flavors)
	}
	return r.createMissingPods(ctx, job, sp)
}

// replaceFailedPods deletes the failed pods whose retry delay is over, so that they are
// created again.
func (r *TFJobReconciler) replaceFailedPods(ctx context.Context, job *tfv1.TFJob, retries []retry) error {
	var due []*corev1.Pod
	for _, rt := range retries {
		pod := rt.pod
		if rt.failures == 0 {
			due = append(due, pod)
			continue
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

// retryEvents say once for each counted failure when its replica comes back: while
// the failure is being counted, its pod carries the finalizer.
func retryEvents(retries []retry) []jobEvent {
	var out []jobEvent
	for _, rt := range retries {
		if rt.failures > 0 && hasFinalizer(rt.pod) {
			out = append(out, newJobEvent(corev1.EventTypeNormal, tfv1.ReasonRetryBackoff,
				"pod %s failed (%s); re-creating it in %v (failure %d in a row)",
				rt.pod.Name, exitSummary(rt.pod), rt.left.Round(time.Second), rt.failures))
		}
	}
	return out
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
