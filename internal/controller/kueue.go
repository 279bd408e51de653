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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
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
var WorkloadGVK = build.WorkloadGVK

// Condition types of a Workload, as Kueue names them.
const (
	wlQuotaReserved = "QuotaReserved"
	wlAdmitted      = "Admitted"
	wlEvicted       = "Evicted"
	wlRequeued      = "Requeued"
	wlFinished      = "Finished"
)

// kueueView is what a reconcile reads of the Workload of a job in a Kueue queue.
type kueueView struct {
	// queue is the job's LocalQueue, "" for a job in no queue.
	queue string
	// served reports whether the API server serves Kueue's Workload API.
	served bool
	// wl is the job's Workload, nil until it is created; status is its status.
	wl     *unstructured.Unstructured
	status *workloadStatus
	// priority is the priority a Workload yet to be created gets; read only then.
	priority workloadPriority
}

// readKueue reads the job's Workload when the job waits in a Kueue queue, and starts
// the watch of Workloads the first time they are found served.
func (r *TFJobReconciler) readKueue(ctx context.Context, job *tfv1.TFJob) (*kueueView, error) {
	v := &kueueView{status: &workloadStatus{}}
	if kubeflow.IsKubeflow(job) {
		// Kueue's own kubeflow.org/tfjob integration queues these jobs: it makes their
		// Workload and admits them through runPolicy.suspend.
		return v, nil
	}
	if v.queue = job.Labels[tfv1.LabelKueueQueue]; v.queue == "" {
		return v, nil
	}
	served, err := workloadsServed(r.RESTMapper())
	if err != nil || !served {
		return v, err
	}
	v.served = true
	if err := r.workloads.ensure(); err != nil {
		return nil, err
	}
	if v.wl, err = r.getWorkload(ctx, job); err != nil {
		return v, err
	}
	if v.wl == nil {
		if !jobFinished(&job.Status) {
			v.priority, err = r.readWorkloadPriority(ctx, job)
		}
		return v, err
	}
	v.status, err = readWorkloadStatus(v.wl)
	return v, err
}

// kueuePlan is what Kueue's admission asks of one reconcile: the writes to the job's
// Workload, and whether the job waits.
type kueuePlan struct {
	queue string
	// unavailable fails the job: it is labelled for a queue Kueue does not serve.
	unavailable string
	// devicesRefused fails the job: it asks for devices by deviceClaim, which its
	// Workload does not carry.
	devicesRefused string
	// create the job's Workload; active, when set, is its spec.active to write.
	create bool
	active *bool
	// finish marks the Workload of a finished job Finished, so Kueue frees its quota.
	finish bool
	// release gives back the quota of an evicted Workload whose pods are all gone.
	release bool
	// holdReason and holdMsg, when set, keep the job suspended until Kueue admits it.
	holdReason, holdMsg string
	// admission is where Kueue placed the admitted job's pods.
	admission *workloadAdmission
}

// decideKueue decides what Kueue's admission asks of this reconcile, as Kueue's own
// job reconciler does for the built-in kinds: a job in a queue gets its Workload, waits
// until Kueue admits it, and gives its quota back once evicted and stopped. The user's
// suspension deactivates the Workload, so that Kueue evicts it.
func decideKueue(job *tfv1.TFJob, pods []*corev1.Pod, v *kueueView) kueuePlan {
	p := kueuePlan{queue: v.queue}
	switch {
	case v.queue == "":
		return p
	case !jobFinished(&job.Status) && queuedDeviceClaim(job, v.queue) != "":
		p.devicesRefused = queuedDeviceClaim(job, v.queue)
		return p
	case !v.served:
		p.unavailable = fmt.Sprintf("the job is labelled %s=%s but the API server does not serve Kueue's %s %s: install Kueue, or remove the label",
			tfv1.LabelKueueQueue, v.queue, WorkloadGVK.Kind, WorkloadGVK.GroupVersion())
		return p
	case jobFinished(&job.Status):
		p.finish = v.wl != nil && !meta.IsStatusConditionTrue(v.status.Conditions, wlFinished)
		return p
	}
	p.create = v.wl == nil
	active := !jobSuspended(job)
	if v.wl != nil && workloadActive(v.wl) != active {
		p.active = &active
	}
	if active {
		p.holdReason, p.holdMsg = kueueHold(build.WorkloadName(job), v.status, v.queue)
		if p.holdReason == "" {
			p.admission = v.status.Admission
			return p
		}
	}
	p.release = meta.IsStatusConditionTrue(v.status.Conditions, wlEvicted) && v.status.hasQuota() && !anyLive(pods)
	return p
}

// syncWorkload writes what decideKueue planned for the job's Workload.
func (r *TFJobReconciler) syncWorkload(ctx context.Context, job *tfv1.TFJob, v *kueueView, p kueuePlan, now time.Time) error {
	wl := v.wl
	var err error
	if p.create {
		if wl, err = r.createWorkload(ctx, job, p.queue, v.priority); err != nil {
			return err
		}
	}
	if p.active != nil {
		if err := r.setWorkloadActive(ctx, wl, *p.active); err != nil {
			return err
		}
	}
	if p.finish {
		return r.finishWorkload(ctx, job, wl, v.status, now)
	}
	if p.release {
		return r.releaseQuota(ctx, wl, v.status, now)
	}
	return nil
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

// readFlavors reads the resource flavors Kueue admitted the job's pod sets to, when
// its pods are about to be created (starting); a flavor that is gone places nothing.
func (r *TFJobReconciler) readFlavors(ctx context.Context, starting bool, v *kueueView) (map[string]*resourceFlavorSpec, error) {
	if !starting || v == nil || v.status == nil || v.status.Admission == nil {
		return nil, nil
	}
	flavors := map[string]*resourceFlavorSpec{}
	for _, psa := range v.status.Admission.PodSetAssignments {
		for _, name := range flavorNames(psa.Flavors) {
			if _, ok := flavors[name]; ok {
				continue
			}
			flavor, err := r.getResourceFlavor(ctx, name)
			if err != nil {
				return nil, err
			}
			flavors[name] = flavor
		}
	}
	return flavors, nil
}

// placedOnFlavors is the job with its replicas placed on the resource flavors Kueue
// admitted them to: each flavor's node labels join the replica's node selector and its
// tolerations the replica's. Only the pods built from it carry the placement.
func placedOnFlavors(job *tfv1.TFJob, adm *workloadAdmission, flavors map[string]*resourceFlavorSpec) *tfv1.TFJob {
	job = job.DeepCopy()
	for _, psa := range adm.PodSetAssignments {
		rt, ok := replicaTypeOfPodSet(job, psa.Name)
		if !ok {
			continue
		}
		spec := &job.Spec.TFReplicaSpecs[rt].Template.Spec
		for _, name := range flavorNames(psa.Flavors) {
			flavor := flavors[name]
			if flavor == nil {
				continue
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
	return job
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
	return kindServed(mapper, WorkloadGVK, "Kueue's Workload API")
}

// kindServed reports whether the API server serves the kind, which the error names as what.
func kindServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind, what string) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", what, err)
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
