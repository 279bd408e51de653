// Package controller is the TFJob controller: it turns a TFJob into pods and a headless
// Service, derives the job's status from its pods, and carries out the job's policies.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// Options configure the reconciler.
type Options struct {
	PodOptions
	// HostPortRange is where HostNetwork replicas get their ports.
	HostPortRange PortRange
	// PodCreateConcurrency bounds the pod creations in flight, all jobs together.
	PodCreateConcurrency int
	// RetryBackoff is the delay before a failed replica is re-created, doubling with
	// each failure in a row up to 6 minutes; DefaultRetryBackoff when 0.
	RetryBackoff time.Duration
	// Kubeflow reconciles Kubeflow's kubeflow.org/v1 TFJobs too, whose CRD the API
	// server must then serve. Off unless asked: where training-operator still owns that
	// CRD, its jobs are its own.
	Kubeflow bool
}

// TFJobReconciler reconciles TFJobs.
type TFJobReconciler struct {
	client.Client
	// APIReader reads what the cache does not hold (storage classes, existing claims),
	// only when a job's pods are about to be created; the client when nil.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Options

	// kubeflow is true for the reconciler of kubeflow.org TFJobs (kinds.go).
	kubeflow bool

	// pods reads the cached pods of a job; nil when the reconciler runs without a
	// manager, and reads them through Client.
	pods *podIndex
	// workloads starts the watch of Kueue's Workloads once they are served; nil when
	// the reconciler runs without a manager.
	workloads *workloadWatch

	clock        clock.Clock
	expectations *expectations
	retries      retryCounts
	refusals     creationBackoff
	createSlots  chan struct{}
	// progressNotify asks for the reconcile of a job whose progress poll brought an
	// answer; nil without a manager.
	progressNotify func(types.NamespacedName)
	// polls polls the jobs' lead replicas; the shared progressPolls when nil.
	polls *progressPoller
	// imageVolumes says whether the nodes mount the agent's image; nil without a
	// manager: init containers.
	imageVolumes *imageVolumeDetector
	// lastCreation is when pods were first created for a job whose status has not been
	// written since, by job UID; lastAnyCreation is when any pod was last created, in
	// Unix nanoseconds.
	lastCreation    sync.Map
	lastAnyCreation atomic.Int64
}

// NewTFJobReconciler returns a reconciler using c for every read and write.
func NewTFJobReconciler(c client.Client, recorder events.EventRecorder, opts Options) *TFJobReconciler {
	if opts.PodCreateConcurrency <= 0 {
		opts.PodCreateConcurrency = 32
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
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

// Only the verbs the controller uses (the leader election lease is in a namespaced Role
// of the install, config/rbac/leader_election_role.yaml).
// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs/status,verbs=patch
// +kubebuilder:rbac:groups=tfk8s.io,resources=tfjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;create
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;delete

// Reconcile brings one TFJob's pods and status in line with its spec.
func (r *TFJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && ctx.Err() != nil {
		// The controller is stopping: what was cut short is done again when it (or
		// another replica) starts, and is no error to report.
		return ctrl.Result{}, nil
	}
	return res, err
}

// reconcile observes, decides and then acts: it reads everything before deciding, and
// everything it writes is a named step after decide, which reads nothing and writes
// nothing.
func (r *TFJobReconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// 1. Observe: the job, its pods and record pod, those an earlier job of its name
	// left behind, and, for a live job, everything else decide reads (observeLive).
	w, err := r.observe(ctx, req)
	if w == nil || err != nil {
		return ctrl.Result{}, err
	}
	// 2. A job that is gone only releases its pods, so that garbage collection can
	// delete them.
	if w.job == nil {
		r.refusals.forget(req.NamespacedName)
		return ctrl.Result{}, r.releasePods(ctx, w.orphans)
	}
	job := w.job
	logger := log.FromContext(ctx).WithValues("tfjob", klog.KObj(job))
	ctx = log.IntoContext(ctx, logger)
	switch {
	case w.stale:
		// 3. Act only on a cache that shows tfk8s's own last writes.
		logger.V(2).Info("Waiting for the cache to show the last writes")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case job.DeletionTimestamp != nil:
		// 4. A job being deleted only releases its pods.
		r.expectations.forget(job.UID)
		return ctrl.Result{}, r.releasePods(ctx, w.pods)
	}

	// 5. Decide, without a write: the job's new status and what each step of act writes.
	p := r.decide(w)
	// 6. Act, the status written once.
	return r.act(ctx, w, p)
}

// act carries out the plan in a fixed order: Kueue and suspension, the pods and what
// they need, the TensorBoard, the status, and last what waits on the status being
// written (releasing pods, the end record, the TTL).
func (r *TFJobReconciler) act(ctx context.Context, w *world, p *plan) (ctrl.Result, error) {
	job, now := w.job, w.now
	// 1. Act: Kueue's admission and release, and the suspension of a job not scheduled
	// in time; the rest of the reconcile acts on the job as they left it.
	if err := r.syncWorkload(ctx, job, w.kueue, p.kueue, now.Time); err != nil {
		return ctrl.Result{}, err
	}
	if p.suspend {
		if err := r.suspendOnScheduleTimeout(ctx, job); err != nil {
			return ctrl.Result{}, err
		}
	}
	run, st := p.run, p.o.status
	finishedBefore := jobFinished(st)

	// 2. Act on the pods, the claims, the gang and the Service; what the API server
	// said of them goes into the status.
	out, requeue, err := r.actOnPods(ctx, run, w.pods, p)
	requeue = minPositive(requeue, p.requeue)
	errs := []error{err}
	recordStart(st, out, now)

	// 3. Write the TensorBoard's objects, and put it and the end record's outcome into
	// the status. A job that the act steps failed just now outlives its TTL until the
	// next reconcile, which the status write brings, decides its end record.
	tp, rp := p.tensorBoard, p.record
	st.TensorBoard, requeue = tp.status, minPositive(requeue, tp.requeue)
	errs = append(errs, r.syncTensorBoard(ctx, tp))
	rp.setCondition(st, now)
	rp.hold = rp.hold || (jobFinished(st) && !finishedBefore)
	// Queue a running job's progress poll when due (progress.go); its answer brings
	// the reconcile that writes it.
	requeue = minPositive(requeue, r.syncProgress(ctx, run, p.progress, now))

	// 4. Write the status once, if it changed; right after pods were created, routine
	// changes wait for the batch period, so a burst of jobs costs one write each.
	// The events of the act steps say what they just did: they follow the write when
	// there is one, and are emitted at once when it is deferred. When the write
	// fails, their warnings are emitted all the same: the next reconcile does not
	// repeat a refused creation while its backoff lasts (holdFor), so its warning
	// would be lost; the status changes are announced only once written.
	if wait := r.statusDeferral(run, p.o); wait > 0 {
		requeue = minPositive(requeue, wait)
		r.emit(run, out.events)
	} else if err := r.writeStatus(ctx, run, w.stored, st); err != nil {
		r.emit(run, warnings(out.events))
		return ctrl.Result{}, errors.Join(append(errs, err)...)
	} else {
		r.emit(run, out.events)
		r.announce(run, p.o, now)
	}

	// 5. The outcomes are recorded: release the finished pods, act on the end record,
	// and delete the job once its TTL after finishing has passed and its end is recorded.
	wait, err := r.finish(ctx, run, st, p.o.release, rp, now.Time)
	requeue = minPositive(requeue, wait)
	if err := errors.Join(append(errs, err)...); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// While pods are being created, routine status changes (the Created condition, counts of
// active pods) wait: a status write on a TFJob costs the API server several pod
// creations, and the pods are what the user waits for. statusQuietPeriod is how long
// pod creation must have been idle, across all jobs, before they are written;
// maxStatusDelay bounds the wait for any one job.
const (
	statusQuietPeriod = 250 * time.Millisecond
	maxStatusDelay    = 5 * time.Second
)

// statusDeferral returns how long the job's status write may wait, or 0 to write now.
// Outcomes are never held back: a finished job, a failure, a restart, a pod whose
// finalizer waits on the status being written, or pods refused or accepted again.
func (r *TFJobReconciler) statusDeferral(job *tfv1.TFJob, o *observation) time.Duration {
	wait := r.creationBurstLeft(job)
	if wait <= 0 || jobFinished(o.status) || len(o.failures) > 0 || o.restarted > 0 || len(o.release) > 0 ||
		refusalChanged(&job.Status, o.status) {
		r.lastCreation.Delete(job.UID)
		return 0
	}
	return wait
}

// serviceDeferral returns how long creating the job's Service may wait, or 0 to create
// it now. Like the status, it waits while pods are being created: no replica can look
// a name up before it is bound to a node, and for a burst of small jobs the Service
// (with the EndpointSlice and Endpoints the cluster adds for it) costs the API server
// as much as the pods the user waits for. Once a pod of the job is bound, it is
// created at once.
func (r *TFJobReconciler) serviceDeferral(job *tfv1.TFJob, pods []*corev1.Pod) time.Duration {
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			return 0
		}
	}
	return r.creationBurstLeft(job)
}

// creationBurstLeft is how long the job's routine writes may still wait for pod
// creation to pause (statusQuietPeriod without any pod created, across all jobs), at
// most maxStatusDelay after the job's first pods; 0 when they are due or the job's pods
// were not created in a burst.
func (r *TFJobReconciler) creationBurstLeft(job *tfv1.TFJob) time.Duration {
	v, ok := r.lastCreation.Load(job.UID)
	if !ok {
		return 0
	}
	now := r.clock.Now()
	jobLeft := v.(time.Time).Add(maxStatusDelay).Sub(now)
	quietLeft := time.Unix(0, r.lastAnyCreation.Load()).Add(statusQuietPeriod).Sub(now)
	return max(0, min(jobLeft, quietLeft))
}

// writeStatus patches the job's status if it changed, with an optimistic lock so that a
// status computed from a stale job is refused rather than written.
func (r *TFJobReconciler) writeStatus(ctx context.Context, job *tfv1.TFJob, stored *kubeflowv1.JobStatus, st *tfv1.TFJobStatus) error {
	st.State = jobState(st)
	st.ObservedGeneration = job.Generation
	if equality.Semantic.DeepEqual(&job.Status, st) {
		return nil
	}
	before := job.ResourceVersion
	if err := r.patchStatus(ctx, job, stored, st); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	r.expectations.expectStatusWritten(job.UID, before)
	return nil
}

// deleteExpired deletes a finished job once its TTL after finishing has passed, and
// otherwise returns when it will have, or 0. Garbage collection deletes what it owns.
func (r *TFJobReconciler) deleteExpired(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus, now time.Time) (time.Duration, error) {
	if !jobFinished(st) {
		return 0, nil
	}
	job.Status = *st
	expired, left := ttlExpired(job, now)
	if !expired {
		return left, nil
	}
	log.FromContext(ctx).V(2).Info("Deleting TFJob: its TTL after finishing has passed")
	err := r.Delete(ctx, apiObject(job), client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &job.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("deleting TFJob after its TTL: %w", err)
	}
	return 0, nil
}
