package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// SetupWithManager registers the reconciler with a manager: it watches TFJobs and the
// pods and Services they own.
func (r *TFJobReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	pods, err := newPodIndex(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	r.pods = pods
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&tfv1.TFJob{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		WithOptions(opts).
		Build(r)
	if err != nil {
		return err
	}
	r.workloads = newWorkloadWatch(mgr, c)
	return r.workloads.startIfServed(mgr.GetRESTMapper())
}

// podOwner is the name of the TFJob controlling obj, if one does.
func podOwner(obj metav1.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "TFJob" || ref.APIVersion != tfv1.GroupVersion.String() {
		return nil
	}
	return []string{ref.Name}
}
