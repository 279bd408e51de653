package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
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
