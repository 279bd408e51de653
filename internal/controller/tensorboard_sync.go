package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// syncTensorBoard creates the job's TensorBoard while it is wanted and deletes it once
// its time is over. It returns where the TensorBoard is, for the status (nil for none),
// and when to look again.
func (r *TFJobReconciler) syncTensorBoard(ctx context.Context, job *tfv1.TFJob, st *tfv1.TFJobStatus, now time.Time) (*tfv1.TensorBoardStatus, time.Duration, error) {
	tb := job.Spec.TensorBoard
	if tb == nil || !tb.Enabled {
		if st.TensorBoard == nil {
			return nil, 0, nil
		}
		return nil, 0, r.deleteTensorBoard(ctx, job)
	}
	expiry := tensorBoardExpiry(job, st)
	if !expiry.IsZero() && !now.Before(expiry) {
		return nil, 0, r.deleteTensorBoard(ctx, job)
	}
	key := client.ObjectKey{Namespace: job.Namespace, Name: tfjob.TensorBoardName(job.Name)}
	var errs []error
	deploy := &appsv1.Deployment{}
	if err := r.Get(ctx, key, deploy); apierrors.IsNotFound(err) {
		deploy = build.TensorBoard(job, r.PodOptions)
		errs = append(errs, createOwned(ctx, r.Client, deploy))
	} else if err != nil {
		errs = append(errs, fmt.Errorf("reading the TensorBoard deployment: %w", err))
	}
	if err := r.Get(ctx, key, &corev1.Service{}); apierrors.IsNotFound(err) {
		errs = append(errs, createOwned(ctx, r.Client, build.TensorBoardService(job)))
	} else if err != nil {
		errs = append(errs, fmt.Errorf("reading the TensorBoard service: %w", err))
	}
	status := &tfv1.TensorBoardStatus{
		ServiceName: key.Name,
		URL:         tensorBoardURL(job),
		Ready:       metav1.IsControlledBy(deploy, job) && deploy.Status.ReadyReplicas > 0,
	}
	var requeue time.Duration
	if !expiry.IsZero() {
		status.ExpiresAt = &metav1.Time{Time: expiry.Truncate(time.Second)}
		requeue = expiry.Sub(now)
	}
	return status, requeue, errors.Join(errs...)
}

// createOwned creates an object the job owns; one that exists already is left alone.
func createOwned(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// deleteTensorBoard deletes the job's TensorBoard Deployment and Service, if the job
// owns them.
func (r *TFJobReconciler) deleteTensorBoard(ctx context.Context, job *tfv1.TFJob) error {
	key := client.ObjectKey{Namespace: job.Namespace, Name: tfjob.TensorBoardName(job.Name)}
	var errs []error
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := r.Get(ctx, key, obj); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if !metav1.IsControlledBy(obj, job) {
			continue
		}
		err := r.Delete(ctx, obj, client.Preconditions{UID: ptrUID(obj)}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the TensorBoard %T: %w", obj, err))
		}
	}
	return errors.Join(errs...)
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
