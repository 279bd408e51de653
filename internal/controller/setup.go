package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
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
	b := ctrl.NewControllerManagedBy(mgr)
	if err := watchWorkloads(mgr, b); err != nil {
		return err
	}
	return b.
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
