package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// SetupWithManager registers the reconciler with a manager: it watches TFJobs and the
// pods and Services they own. When the API server serves Kubeflow's TFJob, a second
// reconciler of the same kind serves those jobs, sharing the pod index.
func (r *TFJobReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	pods, err := newPodIndex(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	r.pods = pods
	r.imageVolumes = &imageVolumeDetector{reader: mgr.GetAPIReader()}
	if err := mgr.Add(r.imageVolumes); err != nil {
		return err
	}
	if err := r.setupKubeflow(mgr, opts); err != nil {
		return err
	}
	progress := make(chan event.GenericEvent, progressQueue)
	r.progressNotify = notifyProgress(progress)
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&tfv1.TFJob{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		WatchesRawSource(source.Channel(progress, &handler.EnqueueRequestForObject{})).
		WithOptions(opts).
		Build(r)
	if err != nil {
		return err
	}
	r.workloads = newWorkloadWatch(mgr, c)
	return r.workloads.startIfServed(mgr.GetRESTMapper())
}

// notifyProgress returns a function that queues the reconcile of a job on ch without
// waiting: when ch is full, the job's next turn (its progress due again) writes the
// answer.
func notifyProgress(ch chan<- event.GenericEvent) func(types.NamespacedName) {
	return func(job types.NamespacedName) {
		select {
		case ch <- event.GenericEvent{Object: &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name}}}:
		default:
		}
	}
}

// setupKubeflow registers a reconciler of kubeflow.org TFJobs when Options.Kubeflow
// asks for one, and refuses to start when the API server does not serve them: a flag
// that does nothing would hide a missing CRD. It watches pods and Services, not Kueue's
// Workloads: Kueue's own kubeflow.org/tfjob integration queues those jobs.
func (r *TFJobReconciler) setupKubeflow(mgr ctrl.Manager, opts controller.Options) error {
	if !r.Kubeflow {
		return nil
	}
	served, err := kubeflowServed(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	if !served {
		return fmt.Errorf("--kubeflow: the API server serves no %s: install config/crd/kubeflow (the chart's kubeflow.enabled), or leave the flag off", kubeflow.GVK.GroupKind())
	}
	kr := NewTFJobReconciler(r.Client, r.Recorder, r.Options)
	kr.APIReader, kr.pods, kr.imageVolumes, kr.kubeflow = r.APIReader, r.pods, r.imageVolumes, true
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubeflow-tfjob").
		For(&kubeflowv1.TFJob{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		WithOptions(opts).
		Complete(kr)
}

// podOwner is the ownerKey (kinds.go) of the TFJob controlling obj, of either API, if
// one does.
func podOwner(obj metav1.Object) []string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "TFJob" {
		return nil
	}
	switch ref.APIVersion {
	case tfv1.GroupVersion.String(), kubeflowv1.GroupVersion.String():
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		return []string{ownerKey(gv.Group, ref.Name)}
	}
	return nil
}
