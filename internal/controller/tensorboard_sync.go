package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// tensorBoardPlan is what the job's TensorBoard needs written, and where it is for the
// status.
type tensorBoardPlan struct {
	// create are the Deployment and Service to create; remove the job's own to delete.
	create, remove []client.Object
	// status is the TensorBoard's status, nil for none.
	status *tfv1.TensorBoardStatus
	// requeue is when the TensorBoard expires, or 0.
	requeue time.Duration
	// err is why its objects could not be read; it is reported after the status write.
	err error
}

// decideTensorBoard decides the job's TensorBoard from the objects observed, without a
// write: created while it is wanted, deleted once its time is over or it is no longer
// asked for.
func decideTensorBoard(job *tfv1.TFJob, st *tfv1.TFJobStatus, v tensorBoardView, opts PodOptions, now time.Time) tensorBoardPlan {
	tb := job.Spec.TensorBoard
	expiry := time.Time{}
	if tb != nil && tb.Enabled {
		expiry = tensorBoardExpiry(job, st)
	}
	if tb == nil || !tb.Enabled || (!expiry.IsZero() && !now.Before(expiry)) {
		return tensorBoardPlan{remove: ownedTensorBoard(job, v), err: v.err}
	}
	p := tensorBoardPlan{err: v.err}
	if v.err == nil && v.deploy == nil {
		p.create = append(p.create, build.TensorBoard(job, opts))
	}
	if v.err == nil && v.service == nil {
		p.create = append(p.create, build.TensorBoardService(job))
	}
	p.status = &tfv1.TensorBoardStatus{
		ServiceName: tfjob.TensorBoardName(job.Name),
		URL:         tensorBoardURL(job),
		Ready:       v.deploy != nil && metav1.IsControlledBy(v.deploy, job) && v.deploy.Status.ReadyReplicas > 0,
	}
	if !expiry.IsZero() {
		p.status.ExpiresAt = &metav1.Time{Time: expiry.Truncate(time.Second)}
		p.requeue = expiry.Sub(now)
	}
	return p
}

// ownedTensorBoard are the TensorBoard objects observed that the job owns.
func ownedTensorBoard(job *tfv1.TFJob, v tensorBoardView) []client.Object {
	var owned []client.Object
	if v.deploy != nil && metav1.IsControlledBy(v.deploy, job) {
		owned = append(owned, v.deploy)
	}
	if v.service != nil && metav1.IsControlledBy(v.service, job) {
		owned = append(owned, v.service)
	}
	return owned
}

// syncTensorBoard writes what decideTensorBoard decided: it creates the missing
// objects and deletes those of a TensorBoard whose time is over.
func (r *TFJobReconciler) syncTensorBoard(ctx context.Context, p tensorBoardPlan) error {
	errs := []error{p.err}
	for _, obj := range p.create {
		errs = append(errs, createOwned(ctx, r.Client, obj))
	}
	for _, obj := range p.remove {
		err := r.Delete(ctx, obj, client.Preconditions{UID: ptrUID(obj)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the TensorBoard %T: %w", obj, err))
		}
	}
	return errors.Join(errs...)
}

// createOwned creates an object the job owns; one that exists already is left alone.
func createOwned(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

func ptrUID(obj client.Object) *types.UID { u := obj.GetUID(); return &u }

// defaultTensorBoardTTL is how long TensorBoard stays after the job finished.
const defaultTensorBoardTTL = time.Hour

// tensorBoardExpiry is when the job's TensorBoard is deleted: its time to live after
// the job finished or after `tfk8s tensorboard` last asked for it, whichever is later;
// zero while the job has not finished.
func tensorBoardExpiry(job *tfv1.TFJob, st *tfv1.TFJobStatus) time.Time {
	if !jobFinished(st) || st.CompletionTime == nil {
		return time.Time{}
	}
	ttl := defaultTensorBoardTTL
	if s := job.Spec.TensorBoard.TTLSecondsAfterFinished; s != nil {
		ttl = time.Duration(*s) * time.Second
	}
	from := st.CompletionTime.Time
	if t, err := time.Parse(time.RFC3339, job.Annotations[tfv1.AnnotationTensorBoardRequested]); err == nil && t.After(from) {
		from = t
	}
	return from.Add(ttl)
}

// tensorBoardURL is the TensorBoard's address inside the cluster.
func tensorBoardURL(job *tfv1.TFJob) string {
	return fmt.Sprintf("http://%s.%s.svc:%d/", tfjob.TensorBoardName(job.Name), job.Namespace, tfjob.TensorBoardPort)
}
