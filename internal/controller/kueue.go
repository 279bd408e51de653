package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// Kueue admits a TFJob through its job-framework contract for external frameworks
// (Kueue configured with integrations.externalFrameworks: ["TFJob.v1alpha1.tfk8s.io"]):
// tfk8s creates the job's Workload, one pod set per replica type, so that Kueue reserves
// quota for every replica at once; the job gets no pod until Kueue admits the Workload,
// and loses them all when Kueue evicts it. tfk8s does for its jobs what Kueue's
// jobframework reconciler does for the built-in ones, with the job's own suspension
// doing the stopping: the pods deleted then are neither failures nor restarts.
//
// tfk8s reads and writes Workloads as unstructured objects: Kueue's API module would
// move the versions of other modules tfk8s uses (the gang schedulers' APIs among them).

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get

// WorkloadGVK is the Kueue API tfk8s writes: the Workload of each queued job.
var WorkloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}

// Condition types of a Workload, as Kueue names them.
const (
	wlQuotaReserved = "QuotaReserved"
	wlAdmitted      = "Admitted"
	wlEvicted       = "Evicted"
	wlRequeued      = "Requeued"
	wlFinished      = "Finished"
)

// observeWithKueue is observe for a job that may wait in a Kueue queue: it creates the
// job's Workload, and holds the job (this reconcile's copy of it is suspended, never
// written) until Kueue admits the Workload; then it places the job's pods on the
// admitted flavors (again in this copy's pod templates). A job in no queue is observed
// as it is.
func (r *TFJobReconciler) observeWithKueue(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod, now metav1.Time) (*observation, error) {
	queue := job.Labels[tfv1.LabelKueueQueue]
	if queue == "" {
		return observe(job, pods, now), nil
	}
	served, err := workloadsServed(r.RESTMapper())
	if err != nil {
		return nil, err
	}
	if !served {
		o := observe(job, pods, now)
		if !jobFinished(o.status) {
			finish(o.status, tfv1.JobFailed, tfv1.ReasonKueueUnavailable, fmt.Sprintf(
				"the job is labelled %s=%s but the API server does not serve Kueue's %s %s: install Kueue, or remove the label",
				tfv1.LabelKueueQueue, queue, WorkloadGVK.Kind, WorkloadGVK.GroupVersion()), now)
		}
		return o, nil
	}
	if err := r.workloads.ensure(); err != nil {
		return nil, err
	}
	wl, err := r.getWorkload(ctx, job)
	if err != nil {
		return nil, err
	}
	if jobFinished(&job.Status) {
		return observe(job, pods, now), r.finishWorkload(ctx, job, wl, now.Time)
	}
	if wl == nil {
		if wl, err = r.createWorkload(ctx, job, queue); err != nil {
			return nil, err
		}
	}
	// The user's suspension deactivates the Workload: Kueue evicts it, and its quota is
	// given back once the job's pods are gone.
	active := !jobSuspended(job)
	if err := r.syncWorkloadActive(ctx, wl, active); err != nil {
		return nil, err
	}
	st, err := readWorkloadStatus(wl)
	if err != nil {
		return nil, err
	}
	if !active {
		return observe(job, pods, now), r.releaseStoppedQuota(ctx, wl, st, pods, now.Time)
	}
	reason, msg := kueueHold(wl.GetName(), st, queue)
	if reason == "" {
		return observe(job, pods, now), r.placeOnFlavors(ctx, job, st)
	}
	job.Spec.RunPolicy.Suspend = ptr.To(true)
	o := observe(job, pods, now)
	holdJob(o.status, reason, msg, now)
	return o, r.releaseStoppedQuota(ctx, wl, st, pods, now.Time)
}

// releaseStoppedQuota gives back the quota of an evicted Workload once every pod of
// its job is gone, as Kueue's own job reconciler does, so that Kueue queues it again.
func (r *TFJobReconciler) releaseStoppedQuota(ctx context.Context, wl *unstructured.Unstructured, st *workloadStatus, pods []*corev1.Pod, now time.Time) error {
	if !meta.IsStatusConditionTrue(st.Conditions, wlEvicted) || !st.hasQuota() || anyLive(pods) {
		return nil
	}
	return r.releaseQuota(ctx, wl, st, now)
}

// kueueHold says why the job must wait, as the reason and message of its Suspended
// condition, or "" when its Workload is admitted.
func kueueHold(wl string, st *workloadStatus, queue string) (reason, msg string) {
	if ev := meta.FindStatusCondition(st.Conditions, wlEvicted); ev != nil && ev.Status == metav1.ConditionTrue && st.hasQuota() {
		// Evicted, and the quota not yet given back: the job's pods are being stopped.
		// Once it is, the job waits in its queue like any other.
		return tfv1.ReasonPreempted, fmt.Sprintf("Kueue evicted Workload %s (%s: %s): the job's pods are deleted and it waits in LocalQueue %s to be admitted again",
			wl, ev.Reason, ev.Message, queue)
	}
	if meta.IsStatusConditionTrue(st.Conditions, wlAdmitted) && st.Admission != nil {
		return "", ""
	}
	msg = fmt.Sprintf("waiting for Kueue to admit Workload %s in LocalQueue %s", wl, queue)
	if c := meta.FindStatusCondition(st.Conditions, wlQuotaReserved); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
		msg += ": " + c.Message
	}
	return tfv1.ReasonQueued, msg
}

// holdJob sets the job's Suspended condition to say why Kueue holds it, and takes back
// Running: the job's pods are being deleted, or were never created.
func holdJob(st *tfv1.TFJobStatus, reason, msg string, now metav1.Time) {
	setCondition(st, tfv1.JobSuspended, metav1.ConditionTrue, reason, msg, now)
	if isConditionTrue(st, tfv1.JobRunning) {
		setCondition(st, tfv1.JobRunning, metav1.ConditionFalse, reason, msg, now)
	}
}

// anyLive reports whether a pod of the job still runs or is still being deleted: Kueue's
// quota is given back only once the job holds no node's resources.
func anyLive(pods []*corev1.Pod) bool {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil ||
			(pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed) {
			return true
		}
	}
	return false
}

// placeOnFlavors puts the job's replicas on the resource flavors Kueue admitted them to:
// each flavor's node labels join the replica's node selector and its tolerations the
// replica's, in this reconcile's copy of the pod templates.
func (r *TFJobReconciler) placeOnFlavors(ctx context.Context, job *tfv1.TFJob, st *workloadStatus) error {
	for _, psa := range st.Admission.PodSetAssignments {
		rt, ok := replicaTypeOfPodSet(job, psa.Name)
		if !ok {
			continue
		}
		spec := &job.Spec.TFReplicaSpecs[rt].Template.Spec
		for _, name := range flavorNames(psa.Flavors) {
			flavor, err := r.getResourceFlavor(ctx, name)
			if err != nil {
				return err
			}
			if len(flavor.NodeLabels) > 0 && spec.NodeSelector == nil {
				spec.NodeSelector = map[string]string{}
			}
			for k, v := range flavor.NodeLabels {
				spec.NodeSelector[k] = v
			}
			spec.Tolerations = append(spec.Tolerations, flavor.Tolerations...)
		}
	}
	return nil
}

// getResourceFlavor reads a Kueue ResourceFlavor's placement.
func (r *TFJobReconciler) getResourceFlavor(ctx context.Context, name string) (*resourceFlavorSpec, error) {
	u := newKueueObject("ResourceFlavor")
	if err := r.reader().Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("Admitted to a ResourceFlavor that is gone; placing the job without it", "flavor", name)
			return &resourceFlavorSpec{}, nil
		}
		return nil, fmt.Errorf("reading ResourceFlavor %s: %w", name, err)
	}
	spec := &resourceFlavorSpec{}
	return spec, fromUnstructured(u.Object["spec"], spec, "ResourceFlavor "+name)
}

// workloadWatch makes the controller follow the Workloads of its jobs (their metadata
// only: a change of status is a new resourceVersion) from when the API server serves
// Kueue's Workload API: at the controller's start, or, for Kueue installed later, at
// the first reconcile of a queued job that finds the API served. No restart is needed.
type workloadWatch struct {
	mu      sync.Mutex
	started bool
	start   func() error
}

// newWorkloadWatch returns the watch of Workloads for the controller c, not started.
func newWorkloadWatch(mgr ctrl.Manager, c controller.Controller) *workloadWatch {
	return &workloadWatch{start: func() error {
		wl := &metav1.PartialObjectMetadata{}
		wl.SetGroupVersionKind(WorkloadGVK)
		owner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &tfv1.TFJob{}, handler.OnlyControllerOwner())
		return c.Watch(source.Kind[client.Object](mgr.GetCache(), wl, owner))
	}}
}

// startIfServed starts the watch if the API server serves Workloads.
func (w *workloadWatch) startIfServed(mapper meta.RESTMapper) error {
	served, err := workloadsServed(mapper)
	if err != nil || !served {
		return err
	}
	return w.ensure()
}

// workloadsServed reports whether the API server serves Kueue's Workload API.
func workloadsServed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(WorkloadGVK.GroupKind(), WorkloadGVK.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering Kueue's Workload API: %w", err)
	}
	return true, nil
}

// ensure starts the watch, once; the caller has found Workloads served. A reconciler
// without a manager has no watch to start.
func (w *workloadWatch) ensure() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return nil
	}
	if err := w.start(); err != nil {
		return fmt.Errorf("watching Kueue's Workloads: %w", err)
	}
	w.started = true
	return nil
}
