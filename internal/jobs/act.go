package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// SetSuspend sets spec.runPolicy.suspend of the job ref names, of either group, with a
// merge patch of that field alone, so that nothing else a concurrent writer changed is
// overwritten. It returns the job as read before the patch.
func SetSuspend(ctx context.Context, cs *Clients, ref string, suspend bool) (*tfv1.TFJob, error) {
	job, err := Get(ctx, cs.Client, cs.Namespace, ref)
	if err != nil {
		return nil, err
	}
	patch := fmt.Appendf(nil, `{"spec":{"runPolicy":{"suspend":%t}}}`, suspend)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(kubeflow.GVKOf(job))
	obj.SetNamespace(job.Namespace)
	obj.SetName(job.Name)
	err = cs.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return nil, &NotFoundError{Namespace: cs.Namespace, Name: job.Name, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("patching %s %s: %w", ResourceOf(job), job.Name, err)
	}
	return job, nil
}

// TensorBoardEnabled reports whether the job asked for a TensorBoard.
func TensorBoardEnabled(job *tfv1.TFJob) bool {
	return job.Spec.TensorBoard != nil && job.Spec.TensorBoard.Enabled
}

// RequestTensorBoard sets the job's tfv1.AnnotationTensorBoardRequested to now with a
// merge patch of that annotation alone: the controller then keeps the TensorBoard, or
// creates it again, for its time to live from now.
func RequestTensorBoard(ctx context.Context, c client.Client, job *tfv1.TFJob, now time.Time) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		tfv1.AnnotationTensorBoardRequested: now.UTC().Format(time.RFC3339),
	}}})
	if err != nil {
		return fmt.Errorf("encoding the TensorBoard request: %w", err)
	}
	err = c.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return &NotFoundError{Namespace: job.Namespace, Name: job.Name, Err: err}
	}
	if err != nil {
		return fmt.Errorf("annotating tfjob %s to keep its TensorBoard: %w", job.Name, err)
	}
	return nil
}
