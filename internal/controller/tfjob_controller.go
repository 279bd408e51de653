// Package controller is the TFJob controller: it turns a TFJob into pods and a headless
// Service, derives the job's status from its pods, and carries out the job's policies.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// Options configure the reconciler.
type Options struct {
	PodOptions
	// HostPortRange is where HostNetwork replicas get their ports.
	HostPortRange PortRange
	// PodCreateConcurrency bounds the pod creations in flight, all jobs together.
	PodCreateConcurrency int
}

// TFJobReconciler reconciles TFJobs.
type TFJobReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options

	clock        clock.Clock
	expectations *expectations
	createSlots  chan struct{}
}

// NewTFJobReconciler returns a reconciler using c for every read and write.
func NewTFJobReconciler(c client.Client, recorder events.EventRecorder, opts Options) *TFJobReconciler {
	if opts.PodCreateConcurrency <= 0 {
		opts.PodCreateConcurrency = 32
	}
	if opts.HostPortRange == (PortRange{}) {
		opts.HostPortRange = DefaultHostPortRange
	}
	return &TFJobReconciler{
		Client:       c,
		Recorder:     recorder,
		Options:      opts,
		clock:        clock.RealClock{},
		expectations: newExpectations(),
		createSlots:  make(chan struct{}, opts.PodCreateConcurrency),
	}
}

// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch

// Reconcile brings one TFJob's pods and status in line with its spec.
func (r *TFJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &tfv1.TFJob{}
	if err := r.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			// The job is gone: release its pods, so garbage collection can delete them.
			return ctrl.Result{}, r.releaseOrphanedPods(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if !managedByTFK8s(job) {
		return ctrl.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("tfjob", klog.KObj(job))
	ctx = log.IntoContext(ctx, logger)

	// 1. List the job's pods.
	pods, err := r.listPods(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}

	// 2. Act only on a cache that shows tfk8s's own last writes.
	if !r.expectations.satisfied(job.UID, job.ResourceVersion, pods) {
		logger.V(2).Info("Waiting for the cache to show the last writes")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}

	// 3. A job being deleted only releases its pods.
	if job.DeletionTimestamp != nil {
		r.expectations.forget(job.UID)
		return ctrl.Result{}, r.releasePods(ctx, pods)
	}

	// 4. Count the outcomes of the pods that finished into a new status.
	now := metav1.NewTime(r.clock.Now())
	o := observe(job, pods, now)

	// 5. Decide where the job stands: started, suspended, failed, succeeded, running.
	var errs []error
	requeue := r.updateConditions(ctx, job, o, now)

	// 6. Carry out the decision on the pods.
	switch {
	case jobFinished(o.status):
		errs = append(errs, r.deletePods(ctx, job, podsToClean(job, pods)))
	case jobSuspended(job):
		errs = append(errs, r.deletePods(ctx, job, activePods(pods)))
	default:
		errs = append(errs, r.ensureService(ctx, job))
		errs = append(errs, r.deletePods(ctx, job, o.retry))
		errs = append(errs, r.createMissingPods(ctx, job, o))
	}

	// 7. Write the status once, if it changed.
	if err := r.writeStatus(ctx, job, o.status); err != nil {
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	}

	// 8. The outcomes are recorded: release the finished pods.
	errs = append(errs, r.releasePods(ctx, o.release))

	// 9. Delete the job once its TTL after finishing has passed.
	if jobFinished(o.status) {
		job.Status = *o.status
		expired, left := ttlExpired(job, now.Time)
		if expired {
			errs = append(errs, r.deleteJob(ctx, job))
		} else if left > 0 {
			requeue = minPositive(requeue, left)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// updateConditions sets the job's conditions from what observe counted and the job's
// policies, emits an event for every transition, and returns when to look again (for a
// deadline), or 0.
func (r *TFJobReconciler) updateConditions(ctx context.Context, job *tfv1.TFJob, o *observation, now metav1.Time) time.Duration {
	st := o.status
	var requeue time.Duration
	if !isConditionTrue(st, tfv1.JobCreated) {
		setCondition(st, tfv1.JobCreated, metav1.ConditionTrue, tfv1.ReasonCreated,
			fmt.Sprintf("TFJob %s/%s is created", job.Namespace, job.Name), now)
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonCreated, "TFJob %s/%s is created", job.Namespace, job.Name)
		recordJobCreated(job.Namespace)
	}
	for i, rt := range o.failedTypes {
		if rt == tfv1.ReplicaTypeEvaluator {
			r.event(job, corev1.EventTypeWarning, tfv1.ReasonEvaluatorFailed, "%s; training goes on", describeFailure(rt, o.failures[i]))
		}
	}
	if jobFinished(st) {
		return 0
	}
	if jobSuspended(job) {
		if !isConditionTrue(st, tfv1.JobSuspended) {
			setCondition(st, tfv1.JobSuspended, metav1.ConditionTrue, tfv1.ReasonSuspended, "TFJob suspended: its pods are deleted", now)
			setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonSuspended, "TFJob suspended", now)
			r.event(job, corev1.EventTypeNormal, tfv1.ReasonSuspended, "TFJob suspended")
		}
		// The deadline counts running time only: it starts again on resume.
		st.StartTime = nil
		return 0
	}
	if isConditionTrue(st, tfv1.JobSuspended) {
		setCondition(st, tfv1.JobSuspended, metav1.ConditionFalse, tfv1.ReasonResumed, "TFJob resumed", now)
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonResumed, "TFJob resumed")
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}

	if exceeded, left := deadlineExceeded(job, st, now.Time); exceeded {
		r.finish(job, st, tfv1.JobFailed, tfv1.ReasonDeadlineExceeded,
			fmt.Sprintf("TFJob ran longer than activeDeadlineSeconds (%ds)", *job.Spec.RunPolicy.ActiveDeadlineSeconds), now)
		return 0
	} else {
		requeue = left
	}
	if failed, msg := permanentFailure(o); failed {
		r.finish(job, st, tfv1.JobFailed, tfv1.ReasonFailed, msg, now)
		return 0
	}
	if backoffLimitExceeded(job, st) {
		msg := fmt.Sprintf("replicas restarted %d times, more than backoffLimit %d", totalRestarts(st), *job.Spec.RunPolicy.BackoffLimit)
		if f := lastFailure(st); f != nil {
			msg += fmt.Sprintf("; last: %s", describeFailure(f.rt, *f.failure))
		}
		r.finish(job, st, tfv1.JobFailed, tfv1.ReasonBackoffLimitExceeded, msg, now)
		return 0
	}
	if ok, msg := successPolicyMet(job, st); ok {
		r.finish(job, st, tfv1.JobSucceeded, tfv1.ReasonSucceeded, msg, now)
		return 0
	}

	if o.restarted > 0 {
		msg := fmt.Sprintf("TFJob %s/%s is restarting %d replica(s)", job.Namespace, job.Name, o.restarted)
		setCondition(st, tfv1.JobRestarting, metav1.ConditionTrue, tfv1.ReasonRestarting, msg, now)
		setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, tfv1.ReasonRestarting, msg, now)
		r.event(job, corev1.EventTypeWarning, tfv1.ReasonRestarting, "%s", msg)
		recordRestarts(job.Namespace, o.restarted)
	} else if allReplicasRunning(job, o, typesOf(job)) {
		if !isConditionTrue(st, tfv1.JobRunning) {
			if meta.FindStatusCondition(job.Status.Conditions, string(tfv1.JobRunning)) == nil {
				recordJobStartup(now.Sub(job.CreationTimestamp.Time))
			}
			setCondition(st, tfv1.JobRunning, metav1.ConditionTrue, tfv1.ReasonRunning,
				fmt.Sprintf("TFJob %s/%s is running", job.Namespace, job.Name), now)
			r.event(job, corev1.EventTypeNormal, tfv1.ReasonRunning, "every replica is running")
		}
		if isConditionTrue(st, tfv1.JobRestarting) {
			setCondition(st, tfv1.JobRestarting, metav1.ConditionFalse, tfv1.ReasonRunning, "every replica is running again", now)
		}
	}
	return requeue
}

// finish sets the job's final condition. It is never taken back.
func (r *TFJobReconciler) finish(job *tfv1.TFJob, st *tfv1.TFJobStatus, typ tfv1.JobState, reason, msg string, now metav1.Time) {
	setCondition(st, typ, metav1.ConditionTrue, reason, msg, now)
	setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, reason, msg, now)
	if isConditionTrue(st, tfv1.JobRestarting) {
		setCondition(st, tfv1.JobRestarting, metav1.ConditionFalse, reason, msg, now)
	}
	st.CompletionTime = &now
	eventType := corev1.EventTypeNormal
	if typ == tfv1.JobFailed {
		eventType = corev1.EventTypeWarning
		recordJobFailed(job.Namespace)
	} else {
		recordJobSucceeded(job.Namespace)
	}
	r.event(job, eventType, reason, "%s", msg)
}

// writeStatus patches the job's status if it changed, with an optimistic lock so that a
// status computed from a stale job is refused rather than written.
func (r *TFJobReconciler) writeStatus(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus) error {
	st.State = jobState(st)
	st.ObservedGeneration = job.Generation
	if equality.Semantic.DeepEqual(&job.Status, st) {
		return nil
	}
	updated := job.DeepCopy()
	updated.Status = *st
	before := job.ResourceVersion
	if err := r.Status().Patch(ctx, updated, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	r.expectations.expectStatusWritten(job.UID, before)
	return nil
}

// deleteJob deletes a job whose TTL has passed; garbage collection deletes what it owns.
func (r *TFJobReconciler) deleteJob(ctx context.Context, job *tfv1.TFJob) error {
	log.FromContext(ctx).V(2).Info("Deleting TFJob: its TTL after finishing has passed")
	err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting TFJob after its TTL: %w", err)
	}
	return nil
}

func (r *TFJobReconciler) event(job *tfv1.TFJob, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(job, nil, eventType, reason, reason, format, args...)
	}
}

// managedByTFK8s reports whether tfk8s reconciles the job, rather than another controller
// named in runPolicy.managedBy.
func managedByTFK8s(job *tfv1.TFJob) bool {
	m := job.Spec.RunPolicy.ManagedBy
	return m == nil || *m == "" || *m == tfv1.ControllerName
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

func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
