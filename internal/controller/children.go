package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// listPods returns the replica pods the job controls, from the cache, the foreign pods:
// those of an earlier job of the same name, deleted or being deleted, whose pods still
// hold the names this job's pods need, and the job's record pod (nil if none). The
// cached objects are shared, not copied: they are read, never changed in place.
func (r *TFJobReconciler) listPods(ctx context.Context, job *tfv1.TFJob) (own, foreign []*corev1.Pod, record *corev1.Pod, err error) {
	pods, err := r.podsOf(ctx, job.Namespace, jobKey(job))
	if err != nil {
		return nil, nil, nil, err
	}
	own = make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if isRecordPod(pod) {
			if metav1.IsControlledBy(pod, job) {
				record = pod
			}
			continue // not a replica
		}
		if metav1.IsControlledBy(pod, job) {
			own = append(own, pod)
		} else {
			foreign = append(foreign, pod)
		}
	}
	return own, foreign, record, nil
}

// podsOf returns the pods controlled by a TFJob of that ownerKey (kinds.go), this one or
// an earlier one: from the pod index, else (a reconciler without a manager) through the
// client.
func (r *TFJobReconciler) podsOf(ctx context.Context, namespace, key string) ([]*corev1.Pod, error) {
	if r.pods != nil {
		return r.pods.of(namespace, key)
	}
	name := key[strings.LastIndex(key, "/")+1:]
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{tfv1.LabelJobName: name}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if slices.Equal(podOwner(&list.Items[i]), []string{key}) {
			pods = append(pods, &list.Items[i])
		}
	}
	return pods, nil
}

// activePods are the pods pending or running and not being deleted.
func activePods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if isActive(p) {
			out = append(out, p)
		}
	}
	return out
}

// missingReplicas are the replicas of the types to start now that have no pod and have
// not finished for good, except those whose pod name another job's pod still holds.
func missingReplicas(job *tfv1.TFJob, o *observation, taken sets.Set[string]) []ReplicaKey {
	var missing []ReplicaKey
	for _, rt := range typesToStart(job, o) {
		rs := o.status.ReplicaStatuses[rt]
		done := parseIndexes(rs.SucceededIndexes).Union(parseIndexes(rs.FailedIndexes))
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			if done.Has(i) || o.pods[ReplicaKey{Type: rt, Index: i}] != nil || taken.Has(tfjob.PodName(job.Name, rt, i)) {
				continue
			}
			missing = append(missing, ReplicaKey{Type: rt, Index: i})
		}
	}
	return missing
}

// deletePods deletes pods, expecting the cache to show each deletion before the job's
// next pods are created.
func (r *TFJobReconciler) deletePods(ctx context.Context, job *tfv1.TFJob, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		r.expectations.expectDeleted(job.UID, pod.UID)
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// withFailuresInARow notes on a pod replacing a failed one how many times in a row its
// replica has failed, which sets the delay before the next re-creation.
func withFailuresInARow(pod *corev1.Pod, n int32) *corev1.Pod {
	if n > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[tfv1.AnnotationFailuresInARow] = strconv.Itoa(int(n))
	}
	return pod
}

// removeFinalizerPatch removes the tracking finalizer and leaves any other in place.
var removeFinalizerPatch = []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + tfv1.TrackingFinalizer + `"]}}`)

// releasePods removes the tracking finalizer from pods, once their outcome is recorded.
func (r *TFJobReconciler) releasePods(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		if !hasFinalizer(pod) {
			continue
		}
		err := r.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, removeFinalizerPatch))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing the finalizer of pod %s: %w", pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// clearForeignPods releases and deletes the pods an earlier job of the same name left
// behind (deleted, then submitted again at once, or while tfk8s was down): their
// finalizers would otherwise keep them, and the names this job's pods need, forever.
// Garbage collection would delete them in time; tfk8s does at once.
func (r *TFJobReconciler) clearForeignPods(ctx context.Context, job *tfv1.TFJob, foreign []*corev1.Pod) error {
	if len(foreign) == 0 {
		return nil
	}
	errs := []error{r.releasePods(ctx, foreign)}
	for _, pod := range foreign {
		if pod.DeletionTimestamp != nil {
			continue
		}
		err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting pod %s of an earlier job: %w", pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// foreignPodsEvent says which pods of an earlier job of the name clearForeignPods
// deletes.
func foreignPodsEvent(job *tfv1.TFJob, foreign []*corev1.Pod) jobEvent {
	names := make([]string, 0, len(foreign))
	for _, pod := range foreign {
		names = append(names, pod.Name)
	}
	slices.Sort(names)
	return newJobEvent(corev1.EventTypeNormal, tfv1.ReasonPodNameTaken,
		"%d pod(s) of an earlier TFJob named %s still hold this job's pod names (%s): they are being deleted, and this job's pods follow once they are gone",
		len(foreign), job.Name, summarizeNames(names))
}

// summarizeNames lists at most three names, then how many more.
func summarizeNames(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}

// serviceOwner says whose a Service is: its controller, else its first owner, else the
// first field manager that wrote it.
func serviceOwner(svc *corev1.Service) string {
	if ref := metav1.GetControllerOf(svc); ref != nil {
		return fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	}
	if len(svc.OwnerReferences) > 0 {
		return fmt.Sprintf("%s %s", svc.OwnerReferences[0].Kind, svc.OwnerReferences[0].Name)
	}
	if len(svc.ManagedFields) > 0 {
		return fmt.Sprintf("no owner (written by %s)", svc.ManagedFields[0].Manager)
	}
	return "no owner"
}
