package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// A TFJob is served under two APIs, tfk8s.io/v1alpha1 and Kubeflow's kubeflow.org/v1,
// and one reconciler is registered per API. The reconciler works on the tfk8s.io model
// alone; what differs by API is here: reading the job, writing its status, deleting it,
// and whose its pods and Services are. A model read as a Kubeflow job carries
// kubeflow.org/v1 in its TypeMeta (kubeflow.GVKOf), so a builder needs nothing more.

// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs/status,verbs=patch
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs/finalizers,verbs=update

// readJob reads the job of the reconciler's API as the model, and a Kubeflow job's
// status as stored (nil for a tfk8s.io job): patchStatus writes the next one over it.
func (r *TFJobReconciler) readJob(ctx context.Context, key types.NamespacedName) (*tfv1.TFJob, *kubeflowv1.JobStatus, error) {
	if !r.kubeflow {
		job := &tfv1.TFJob{}
		return job, nil, r.Get(ctx, key, job)
	}
	kf := &kubeflowv1.TFJob{}
	if err := r.Get(ctx, key, kf); err != nil {
		return nil, nil, err
	}
	job := kubeflow.ToModel(kf)
	// The state is the model's summary of the conditions; writeStatus compares the
	// whole status, so it is derived here as it is there.
	job.Status.State = jobState(&job.Status)
	return job, &kf.Status, nil
}

// patchStatus writes the job's new status in its API's shape, with an optimistic lock.
// A Kubeflow job's status keeps what the model has no field for (each condition's
// lastUpdateTime) from stored, its status as readJob read it: the lock refuses the
// write if the job changed since.
func (r *TFJobReconciler) patchStatus(ctx context.Context, job *tfv1.TFJob, stored *kubeflowv1.JobStatus, st *tfv1.TFJobStatus) error {
	if !kubeflow.IsKubeflow(job) {
		updated := job.DeepCopy()
		updated.Status = *st
		return r.Status().Patch(ctx, updated, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{}))
	}
	if stored == nil {
		return fmt.Errorf("writing the status of tfjob.kubeflow.org %s: its stored status was not read", job.Name)
	}
	before := &kubeflowv1.TFJob{ObjectMeta: *job.ObjectMeta.DeepCopy(), Status: *stored}
	updated := before.DeepCopy()
	updated.Status = kubeflow.StatusFromModel(st, stored, job.Name, metav1.NewTime(r.clock.Now()))
	return r.Status().Patch(ctx, updated, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// adoptTrainingOperatorPod makes the pod of that name tfk8s's when training-operator
// created it for this kubeflow.org job (controlled by the job, without tfk8s's labels),
// so that a cluster moving from training-operator to tfk8s keeps its running pods: the
// pod gets tfk8s's labels, which bring it into the controller's cache, and the tracking
// finalizer, and the job keeps training-operator's Services and host names
// (keepTrainingOperatorNames). It returns exists, the creation's AlreadyExists error, when there is no
// such pod to adopt or once it is adopted: the pod's arrival in the cache calls the next
// reconcile, which counts it.
func (r *TFJobReconciler) adoptTrainingOperatorPod(ctx context.Context, job *tfv1.TFJob, key ReplicaKey, name string, exists error) error {
	if !kubeflow.IsKubeflow(job) {
		return exists
	}
	pod := &corev1.Pod{}
	if err := r.reader().Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: name}, pod); apierrors.IsNotFound(err) {
		return exists // gone since: the next reconcile creates it
	} else if err != nil {
		return fmt.Errorf("reading pod %s: %w", name, err)
	}
	if !metav1.IsControlledBy(pod, job) || pod.Labels[tfv1.LabelJobName] != "" {
		return exists
	}
	// The job first: were the pod adopted and the job not annotated, a pod re-created
	// after would name its peers by names they do not answer to.
	if err := r.keepTrainingOperatorNames(ctx, job); err != nil {
		return err
	}
	before := pod.DeepCopy()
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	maps.Copy(pod.Labels, build.ReplicaLabels(job.Name, key.Type))
	pod.Labels[tfv1.LabelReplicaIndex] = strconv.Itoa(int(key.Index))
	if pod.DeletionTimestamp == nil && !slices.Contains(pod.Finalizers, tfv1.TrackingFinalizer) {
		pod.Finalizers = append(pod.Finalizers, tfv1.TrackingFinalizer)
	}
	if err := r.Patch(ctx, pod, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting pod %s of training-operator: %w", name, err)
	}
	log.FromContext(ctx).V(2).Info("Adopted a pod training-operator created", "pod", name)
	return exists
}

// apiObject is the job as an object of its API, for a write that needs only its name,
// namespace and UID.
func apiObject(job *tfv1.TFJob) client.Object {
	if !kubeflow.IsKubeflow(job) {
		return job
	}
	return &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID}}
}

// ownerKey names a job among the jobs of both APIs: a tfk8s.io job by its name, a
// Kubeflow job by its name after "kubeflow.org/" (no name has a slash).
func ownerKey(group, name string) string {
	if group == kubeflowv1.GroupVersion.Group {
		return group + "/" + name
	}
	return name
}

// jobKey is the job's ownerKey.
func jobKey(job *tfv1.TFJob) string {
	return ownerKey(kubeflow.GVKOf(job).Group, job.Name)
}

// keyOf is the ownerKey of the reconciler's job of that name.
func (r *TFJobReconciler) keyOf(name string) string {
	if r.kubeflow {
		return ownerKey(kubeflowv1.GroupVersion.Group, name)
	}
	return name
}

// managedByTFK8s reports whether tfk8s reconciles the job, rather than another controller
// named in runPolicy.managedBy. A Kubeflow job is tfk8s's under training-operator's own
// value too, so that a cluster moving from training-operator keeps its jobs.
func managedByTFK8s(job *tfv1.TFJob) bool {
	m := job.Spec.RunPolicy.ManagedBy
	return m == nil || *m == "" || *m == tfv1.ControllerName ||
		(kubeflow.IsKubeflow(job) && *m == kubeflowv1.ManagedByTrainingOperator)
}

// observeNeighbours reads what the decision needs besides the job's pods: its Kueue
// Workload, if it waits in a queue (kueue.go), and a job of the other API that holds
// its name (readRival).
func (r *TFJobReconciler) observeNeighbours(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod) (*kueueView, string, error) {
	kv, err := r.readKueue(ctx, job)
	if err != nil {
		return nil, "", err
	}
	rival, err := r.readRival(ctx, job, pods)
	return kv, rival, err
}

// readRival observes the TFJob of the other API with the job's name, when the controller
// reconciles both: its "tfjob.<group>/<name>" when it holds the name, "" when there is
// none or this job does. Both would name their pods and Service after the name, so one
// must not run: a job that started (a start time, or pods) keeps it; of two not
// started, the one created first (at the same second, the tfk8s.io one). pods are the
// job's own.
func (r *TFJobReconciler) readRival(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod) (string, error) {
	if !r.Kubeflow || job.Status.StartTime != nil || len(pods) > 0 {
		return "", nil
	}
	own, kf := &tfv1.TFJob{}, &kubeflowv1.TFJob{}
	var rival client.Object = kf
	group := kubeflowv1.GroupVersion.Group
	if kubeflow.IsKubeflow(job) {
		rival, group = own, tfv1.GroupVersion.Group
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(job), rival); apierrors.IsNotFound(err) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("reading tfjob.%s %s: %w", group, job.Name, err)
	}
	theirPods, err := r.podsOf(ctx, job.Namespace, ownerKey(group, job.Name))
	if err != nil {
		return "", err
	}
	started := own.Status.StartTime != nil || kf.Status.StartTime != nil || len(theirPods) > 0
	if rivalHoldsName(job.CreationTimestamp, rival.GetCreationTimestamp(), kubeflow.IsKubeflow(job), started) {
		return "tfjob." + group + "/" + job.Name, nil
	}
	return "", nil
}

// rivalHoldsName reports whether the job of the other API holds the name against a
// job not started, created at mine: when it started, or was created first (at the same
// second, the tfk8s.io job counts as first, so that of two exactly one runs).
func rivalHoldsName(mine, theirs metav1.Time, mineKubeflow, theirsStarted bool) bool {
	return theirsStarted || theirs.Before(&mine) || (theirs.Equal(&mine) && mineKubeflow)
}

// kubeflowServed reports whether the API server serves Kubeflow's TFJob: the controller
// then reconciles those jobs as well.
func kubeflowServed(mapper meta.RESTMapper) (bool, error) {
	return kindServed(mapper, kubeflow.GVK, "Kubeflow's TFJob API")
}
