package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// A kubeflow.org job annotated kubeflowv1.AnnotationTrainingOperatorServices is
// addressed as training-operator addressed it: a Service per replica, and TF_CONFIG
// naming those Services. A program that dials <job>-worker-0 itself keeps working, and
// the pods of a job adopted from training-operator agree with those tfk8s re-creates.

// ensureReplicaServices creates each replica's Service unless it exists. One the job
// controls already (training-operator's, of a job tfk8s took over) is adopted: it gets
// tfk8s's job-name label, which brings it into the cache. One that belongs to anything
// else holds the name for good: it returns whose it is, for the job to fail on.
func (r *TFJobReconciler) ensureReplicaServices(ctx context.Context, job *tfv1.TFJob) (takenBy string, err error) {
	for _, want := range build.ReplicaServices(job) {
		key := client.ObjectKeyFromObject(want)
		svc := &corev1.Service{}
		err := r.Get(ctx, key, svc)
		if apierrors.IsNotFound(err) {
			if err = r.Create(ctx, want); err == nil {
				continue
			}
			if !apierrors.IsAlreadyExists(err) {
				return "", fmt.Errorf("creating service %s: %w", want.Name, err)
			}
			// Not in the cache, as it lacks tfk8s's label: read it from the API server.
			if err = r.reader().Get(ctx, key, svc); apierrors.IsNotFound(err) {
				continue // gone since: the next reconcile creates it
			} else if err != nil {
				return "", fmt.Errorf("reading service %s: %w", want.Name, err)
			}
		} else if err != nil {
			return "", fmt.Errorf("reading service %s: %w", want.Name, err)
		}
		if !metav1.IsControlledBy(svc, job) {
			return fmt.Sprintf("Service %s/%s already exists and does not belong to this TFJob, which asks for a Service per replica (annotation %s): delete that Service or submit the job under another name",
				svc.Namespace, svc.Name, kubeflowv1.AnnotationTrainingOperatorServices), nil
		}
		if svc.Labels[tfv1.LabelJobName] == "" {
			if err := r.adoptReplicaService(ctx, job, svc); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// adoptReplicaService gives the job's Service that training-operator created tfk8s's
// job-name label, which brings it into the cache.
func (r *TFJobReconciler) adoptReplicaService(ctx context.Context, job *tfv1.TFJob, svc *corev1.Service) error {
	before := svc.DeepCopy()
	if svc.Labels == nil {
		svc.Labels = map[string]string{}
	}
	svc.Labels[tfv1.LabelJobName] = job.Name
	if err := r.Patch(ctx, svc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopting service %s of training-operator: %w", svc.Name, err)
	}
	log.FromContext(ctx).V(2).Info("Adopted a Service training-operator created", "service", svc.Name)
	return nil
}

// keepTrainingOperatorNames annotates a job whose pods tfk8s adopts from
// training-operator to keep training-operator's Services and host names: a pod tfk8s
// re-creates then names its peers as the adopted pods do, and answers to the name they
// know it by. The annotation shows on the job why it is addressed so.
func (r *TFJobReconciler) keepTrainingOperatorNames(ctx context.Context, job *tfv1.TFJob) error {
	if build.ServicePerReplica(job) && build.Adopted(job) {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:"true",%q:"true"}}}`,
		job.UID, kubeflowv1.AnnotationTrainingOperatorServices, kubeflowv1.AnnotationAdopted)
	if err := r.Patch(ctx, apiObject(job), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("annotating the job %s and %s: %w", kubeflowv1.AnnotationTrainingOperatorServices, kubeflowv1.AnnotationAdopted, err)
	}
	log.FromContext(ctx).V(2).Info("Keeping training-operator's Services and host names for an adopted job")
	return nil
}
