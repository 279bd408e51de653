package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// SetupWithManager registers the reconciler with a manager: it watches TFJobs and the
// pods and Services they own.
func (r *TFJobReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podOwnerIndex, podOwner); err != nil {
		return fmt.Errorf("indexing pods by owner: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&tfv1.TFJob{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		WithOptions(opts).
		Complete(r)
}

// podOwnerIndex indexes cached pods by the name of the TFJob that controls them, so a
// reconcile reads its job's pods without scanning the namespace's, and sees with them
// the pods an earlier job of the same name left behind.
const podOwnerIndex = "tfk8s.io/owner-name"

func podOwner(obj client.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "TFJob" || ref.APIVersion != tfv1.GroupVersion.String() {
		return nil
	}
	return []string{ref.Name}
}

// CacheOptions make the manager's cache hold only what tfk8s reads: the pods and
// Services of TFJobs (by their job-name label), without managed fields or container
// environments (TF_CONFIG grows with the job: a 1000-worker job's pods would hold
// 47 MB of it).
func CacheOptions() cache.Options {
	hasJob, err := labels.NewRequirement(tfv1.LabelJobName, selection.Exists, nil)
	if err != nil {
		panic(err)
	}
	byJob := labels.NewSelector().Add(*hasJob)
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:     {Label: byJob, Transform: stripPod},
			&corev1.Service{}: {Label: byJob},
			// A job's TensorBoard.
			&appsv1.Deployment{}: {Label: byJob, Transform: stripManagedFields},
		},
	}
}

// stripManagedFields drops the managed fields, which tfk8s never reads, from a cached object.
func stripManagedFields(obj any) (any, error) {
	if o, ok := obj.(client.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// stripPod drops what tfk8s never reads from a cached pod.
func stripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = nil
	}
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].Env = nil
	}
	return pod, nil
}
