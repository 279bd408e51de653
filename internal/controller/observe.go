package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// world is what one reconcile reads before it decides anything: observe gathers it and
// writes nothing, so that every write of the reconcile follows the decision. (The
// SubjectAccessReview it may send for a notebook's claim is a question the API server
// answers and stores nothing of.)
type world struct {
	// job is the job to reconcile, nil when it is gone; stored is a Kubeflow job's
	// status as stored (readJob).
	job    *tfv1.TFJob
	stored *kubeflowv1.JobStatus
	// orphans are the pods of a job that is gone, whose finalizers are to be removed
	// so that garbage collection can delete them.
	orphans []*corev1.Pod
	// pods are the job's replica pods, foreign those an earlier job of its name left
	// behind, record its record pod (nil if none).
	pods, foreign []*corev1.Pod
	record        *corev1.Pod
	// stale: the cache does not show tfk8s's own last writes yet, and nothing more was
	// read.
	stale bool
	// kueue is the job's Workload as Kueue sees it; rival names a job of the other API
	// holding the job's name, or "".
	kueue *kueueView
	rival string
	// services are the job's Services as the cache holds them.
	services serviceView
	// gang is the job's gang scheduler as discovery serves it.
	gang gangView
	// starting: pods of the job are about to be created (startsPods), and what
	// creating them needs is read: volumes are the claims and storage classes the
	// job's volumes name, notebook a notebook's claims, flavors the resource flavors
	// Kueue admitted the job to. Each is read around the cache, so only then.
	starting bool
	volumes  []volumeView
	notebook notebookView
	flavors  map[string]*resourceFlavorSpec
	// refusals is what the API server's last refusals of pods hold back.
	refusals refusalView
	// tensorBoard is the job's TensorBoard as it exists.
	tensorBoard tensorBoardView
	// progress is the job's last polled progress.
	progress progressView
	// now is the reconcile's one reading of the clock.
	now metav1.Time
	// devices are the DeviceClasses and templates the job's deviceClaims need, read
	// when its pods may be created.
	devices deviceClaimView
}

// tensorBoardView is the job's TensorBoard Deployment and Service as the cache holds
// them; nil when absent or not read (the job has no TensorBoard and had none).
type tensorBoardView struct {
	deploy  *appsv1.Deployment
	service *corev1.Service
	// err is why they could not be read; the reconcile goes on without them.
	err error
}

// observe reads the job and everything its reconcile decides from: nil when the job is
// another controller's. Of a job being deleted, or whose cache is stale, it reads only
// the pods.
func (r *TFJobReconciler) observe(ctx context.Context, req ctrl.Request) (*world, error) {
	job, stored, err := r.readJob(ctx, req.NamespacedName)
	if apierrors.IsNotFound(err) {
		orphans, err := r.podsOf(ctx, req.Namespace, r.keyOf(req.Name))
		return &world{orphans: orphans}, err
	}
	if err != nil || !managedByTFK8s(job) {
		return nil, err
	}
	w := &world{job: job, stored: stored}
	if w.pods, w.foreign, w.record, err = r.listPods(ctx, job); err != nil {
		return nil, err
	}
	if !r.expectations.satisfied(job.UID, job.ResourceVersion, w.pods) {
		w.stale = true
		return w, nil
	}
	if job.DeletionTimestamp != nil {
		return w, nil
	}
	if err := r.observeLive(ctx, w); err != nil {
		return nil, err
	}
	return w, nil
}

// observeLive reads what deciding on a live job needs beyond its pods: its Kueue
// Workload and flavors, a job of the other API with its name, its Services, its gang
// scheduler's API, its TensorBoard, the clock, the refusals of its pods, its polled
// progress, and, when pods are about to be created, the claims and classes its
// volumes name.
func (r *TFJobReconciler) observeLive(ctx context.Context, w *world) error {
	job := w.job
	var err error
	if w.kueue, w.rival, err = r.observeNeighbours(ctx, job, w.pods); err != nil {
		return err
	}
	w.now = metav1.NewTime(r.clock.Now())
	w.starting = startsPods(w)
	if w.flavors, err = r.readFlavors(ctx, w.starting, w.kueue); err != nil {
		return err
	}
	if !jobFinished(&job.Status) && !jobSuspended(job) {
		if w.services, err = r.readServices(ctx, job); err != nil {
			return err
		}
	}
	if w.gang, err = r.readGang(job, w.pods); err != nil {
		return err
	}
	w.tensorBoard = r.readTensorBoard(ctx, job)
	w.refusals = r.readRefusals(job, w.now.Time)
	w.progress = r.progressPoller().peek(job.UID, w.now.Time)
	if w.refusals.wait > 0 || !w.starting {
		return nil // while pods are held back, their volumes wait too
	}
	if w.devices, err = r.readDeviceClaims(ctx, job); err != nil {
		return err
	}
	if w.volumes, err = r.readVolumes(ctx, job); err != nil {
		return err
	}
	w.notebook, err = r.readNotebookClaims(ctx, job)
	return err
}

// readTensorBoard reads the job's TensorBoard Deployment and Service from the cache,
// when the job asks for a TensorBoard or its status says it had one.
func (r *TFJobReconciler) readTensorBoard(ctx context.Context, job *tfv1.TFJob) tensorBoardView {
	var v tensorBoardView
	if tb := job.Spec.TensorBoard; (tb == nil || !tb.Enabled) && job.Status.TensorBoard == nil {
		return v
	}
	key := client.ObjectKey{Namespace: job.Namespace, Name: tfjob.TensorBoardName(job.Name)}
	deploy, svc := &appsv1.Deployment{}, &corev1.Service{}
	if err := r.Get(ctx, key, deploy); err == nil {
		v.deploy = deploy
	} else if !apierrors.IsNotFound(err) {
		v.err = fmt.Errorf("reading the TensorBoard deployment: %w", err)
		return v
	}
	if err := r.Get(ctx, key, svc); err == nil {
		v.service = svc
	} else if !apierrors.IsNotFound(err) {
		v.err = fmt.Errorf("reading the TensorBoard service: %w", err)
	}
	return v
}
