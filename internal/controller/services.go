package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// serviceView is the job's Services as the cache holds them, nil where it holds none:
// its headless Service and, for a job that asks for a Service per replica, each
// replica's in build.ReplicaServices' order. The cache holds only the Services
// labelled with a job's name.
type serviceView struct {
	headless *corev1.Service
	replicas []*corev1.Service
}

// readServices reads the job's Services from the cache.
func (r *TFJobReconciler) readServices(ctx context.Context, job *tfv1.TFJob) (serviceView, error) {
	var v serviceView
	var err error
	if v.headless, err = r.cachedService(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}); err != nil {
		return v, err
	}
	if !build.ServicePerReplica(job) {
		return v, nil
	}
	for _, want := range build.ReplicaServices(job) {
		svc, err := r.cachedService(ctx, client.ObjectKeyFromObject(want))
		if err != nil {
			return v, err
		}
		v.replicas = append(v.replicas, svc)
	}
	return v, nil
}

// cachedService reads a Service from the cache, nil when it holds none.
func (r *TFJobReconciler) cachedService(ctx context.Context, key client.ObjectKey) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := r.Get(ctx, key, svc); apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading service %s: %w", key.Name, err)
	}
	return svc, nil
}

// servicePlan is what the job's Services need: those to create, an earlier job's
// headless Service to delete, or whose Service holds a name the job needs.
type servicePlan struct {
	create  []*corev1.Service
	remove  *corev1.Service
	takenBy string
}

// decideServices plans the job's Services from those the cache holds: each one absent
// is created, and one that is not the job's is judged by judgeService.
func decideServices(job *tfv1.TFJob, v serviceView) servicePlan {
	var p servicePlan
	if v.headless == nil {
		p.create = append(p.create, build.Service(job))
	} else if p.remove, p.takenBy = judgeService(job, v.headless); p.takenBy != "" {
		return p
	}
	if !build.ServicePerReplica(job) {
		return p
	}
	for i, want := range build.ReplicaServices(job) {
		var svc *corev1.Service
		if i < len(v.replicas) { // unread when the job was finished or suspended
			svc = v.replicas[i]
		}
		switch {
		case svc == nil:
			p.create = append(p.create, want)
		case !metav1.IsControlledBy(svc, job):
			p.takenBy = replicaServiceTaken(svc)
			return p
		}
	}
	return p
}

// judgeService decides on the Service of the job's name that exists: the job's own is
// kept; an earlier job of this name's is to be deleted now rather than left to garbage
// collection (its deletion calls the next reconcile, which creates this job's); any
// other holds the name for good, and judgeService says whose it is.
func judgeService(job *tfv1.TFJob, svc *corev1.Service) (remove *corev1.Service, takenBy string) {
	switch {
	case metav1.IsControlledBy(svc, job):
		return nil, ""
	case slices.Equal(podOwner(svc), []string{jobKey(job)}):
		return svc, ""
	}
	return nil, fmt.Sprintf("Service %s/%s already exists and belongs to %s, not to this TFJob: the job's pods take their DNS names from a Service of the job's name; delete that Service or submit the job under another name",
		svc.Namespace, svc.Name, serviceOwner(svc))
}

// replicaServiceTaken says whose is the Service of a replica's name that is not the
// job's.
func replicaServiceTaken(svc *corev1.Service) string {
	return fmt.Sprintf("Service %s/%s already exists and does not belong to this TFJob, which asks for a Service per replica (annotation %s): delete that Service or submit the job under another name",
		svc.Namespace, svc.Name, kubeflowv1.AnnotationTrainingOperatorServices)
}

// syncServices writes the plan: it deletes an earlier job's Service and creates the
// missing ones. A Service the cache did not show yet the API server holds (one without
// tfk8s's label) is read around the cache and judged as decideServices would: a
// replica's that the job controls (training-operator's, of a job tfk8s took over) is
// adopted. It returns whose Service holds a name the job needs, for the job to fail on.
func (r *TFJobReconciler) syncServices(ctx context.Context, job *tfv1.TFJob, p servicePlan) (takenBy string, err error) {
	if p.takenBy != "" {
		return p.takenBy, nil
	}
	if p.remove != nil {
		if err := r.deleteEarlierService(ctx, p.remove); err != nil {
			return "", err
		}
	}
	for _, want := range p.create {
		err := r.Create(ctx, want)
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating service %s: %w", want.Name, err)
		}
		svc := &corev1.Service{}
		if err := r.reader().Get(ctx, client.ObjectKeyFromObject(want), svc); apierrors.IsNotFound(err) {
			continue // gone since: the next reconcile creates it
		} else if err != nil {
			return "", fmt.Errorf("reading service %s: %w", want.Name, err)
		}
		if takenBy, err := r.settleExisting(ctx, job, want, svc); takenBy != "" || err != nil {
			return takenBy, err
		}
	}
	return "", nil
}

// settleExisting acts on svc, found holding the name of want, one of the job's
// Services: the headless Service is judged by judgeService; a replica's is adopted
// when the job controls it.
func (r *TFJobReconciler) settleExisting(ctx context.Context, job *tfv1.TFJob, want, svc *corev1.Service) (takenBy string, err error) {
	if want.Name == job.Name {
		remove, takenBy := judgeService(job, svc)
		if remove != nil {
			return "", r.deleteEarlierService(ctx, remove)
		}
		return takenBy, nil
	}
	if !metav1.IsControlledBy(svc, job) {
		return replicaServiceTaken(svc), nil
	}
	if svc.Labels[tfv1.LabelJobName] == "" {
		return "", r.adoptReplicaService(ctx, job, svc)
	}
	return "", nil
}

// deleteEarlierService deletes the headless Service an earlier job of the name left.
func (r *TFJobReconciler) deleteEarlierService(ctx context.Context, svc *corev1.Service) error {
	err := r.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting service %s of an earlier job: %w", svc.Name, err)
	}
	return nil
}
