package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// A TFJob is served under two APIs, tfk8s.io/v1alpha1 and Kubeflow's kubeflow.org/v1,
// and one reconciler is registered per API. The reconciler works on the tfk8s.io model
// alone; what differs by API is here: reading the job, writing its status, deleting it,
// and whose its pods and Services are. A model read as a Kubeflow job carries
// kubeflow.org/v1 in its TypeMeta (kubeflow.GVKOf), so a builder needs nothing more.

// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs/status,verbs=patch
// +kubebuilder:rbac:groups=kubeflow.org,resources=tfjobs/finalizers,verbs=update

// readJob reads the job of the reconciler's API as the model.
func (r *TFJobReconciler) readJob(ctx context.Context, key types.NamespacedName) (*tfv1.TFJob, error) {
	if !r.kubeflow {
		job := &tfv1.TFJob{}
		return job, r.Get(ctx, key, job)
	}
	kf := &kubeflowv1.TFJob{}
	if err := r.Get(ctx, key, kf); err != nil {
		return nil, err
	}
	job := kubeflow.ToModel(kf)
	// The state is the model's summary of the conditions; writeStatus compares the
	// whole status, so it is derived here as it is there.
	job.Status.State = jobState(&job.Status)
	return job, nil
}

// patchStatus writes the job's new status in its API's shape, with an optimistic lock.
func (r *TFJobReconciler) patchStatus(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus) error {
	if !kubeflow.IsKubeflow(job) {
		updated := job.DeepCopy()
		updated.Status = *st
		return r.Status().Patch(ctx, updated, client.MergeFromWithOptions(job, client.MergeFromWithOptimisticLock{}))
	}
	// Kubeflow's status keeps what the model has no field for (each condition's
	// lastUpdateTime): the stored job is read again, from the cache.
	stored := &kubeflowv1.TFJob{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(job), stored); err != nil {
		return err
	}
	if stored.UID != job.UID || stored.ResourceVersion != job.ResourceVersion {
		return apierrors.NewConflict(kubeflowv1.GroupVersion.WithResource("tfjobs").GroupResource(), job.Name,
			fmt.Errorf("the cache holds another version of the job"))
	}
	updated := stored.DeepCopy()
	updated.Status = kubeflow.StatusFromModel(st, &stored.Status, job.Name, metav1.NewTime(r.clock.Now()))
	return r.Status().Patch(ctx, updated, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
}

// apiObject is the job as an object of its API, for a write that needs only its name,
// namespace and UID.
func apiObject(job *tfv1.TFJob) client.Object {
	if !kubeflow.IsKubeflow(job) {
		return job
	}
	return &kubeflowv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace, UID: job.UID}}
}

// controllerRef is the controller reference of everything the job owns, to the object of the
// job's API: its deletion deletes them, and its reconciler is called on their events.
func controllerRef(job *tfv1.TFJob) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, kubeflow.GVKOf(job))
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

// kubeflowServed reports whether the API server serves Kubeflow's TFJob: the controller
// then reconciles those jobs as well.
func kubeflowServed(mapper meta.RESTMapper) (bool, error) {
	return kindServed(mapper, kubeflow.GVK, "Kubeflow's TFJob API")
}
