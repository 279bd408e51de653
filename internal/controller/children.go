package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// listPods returns the pods the job controls, from the cache. The cached objects are
// shared, not copied: they are read, never changed in place.
func (r *TFJobReconciler) listPods(ctx context.Context, job *tfv1.TFJob) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	err := r.List(ctx, list, client.InNamespace(job.Namespace),
		client.MatchingFields{podOwnerIndex: string(job.UID)}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], job) {
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

// createMissingPods creates the pod of every replica that has none and has not
// finished, for the replica types the startup policy lets start, in parallel within
// the reconciler's concurrency bound.
func (r *TFJobReconciler) createMissingPods(ctx context.Context, job *tfv1.TFJob, o *observation) error {
	opts := r.PodOptions
	if job.Spec.Networking.Mode == tfv1.NetworkingModeHostNetwork {
		ports, err := allocateHostPorts(job, r.HostPortRange)
		if err != nil {
			return err
		}
		opts.HostPorts = ports
	}
	opts.tfConfigs = NewTFConfigs(job, opts.AddressOptions)
	var missing []ReplicaKey
	for _, rt := range typesToStart(job, o) {
		rs := o.status.ReplicaStatuses[rt]
		done := parseIndexes(rs.SucceededIndexes).Union(parseIndexes(rs.FailedIndexes))
		for i := range replicas(job.Spec.TFReplicaSpecs[rt]) {
			if done.Has(i) || o.pods[ReplicaKey{rt, i}] != nil {
				continue
			}
			missing = append(missing, ReplicaKey{rt, i})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	log.FromContext(ctx).V(2).Info("Creating pods", "count", len(missing))

	// Each pod is built by the goroutine that creates it and dropped once created: a
	// 1000-worker job's pods hold 47 MB of TF_CONFIG, and only the pods in flight are
	// kept in memory.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		created []ReplicaKey
	)
	for _, key := range missing {
		name := PodName(job.Name, key.Type, key.Index)
		r.expectations.expectCreated(job.UID, name)
		r.createSlots <- struct{}{}
		wg.Go(func() {
			defer func() { <-r.createSlots }()
			pod, err := ConstructPod(job, key.Type, key.Index, opts)
			if err != nil {
				err = fmt.Errorf("building pod %s: %w", name, err)
			} else if err = r.Create(ctx, pod); err != nil {
				err = fmt.Errorf("creating pod %s: %w", name, err)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created = append(created, key)
				recordPodCreated()
			case apierrors.IsAlreadyExists(err):
				// Created by an earlier reconcile the cache has not shown yet.
			default:
				r.expectations.creationFailed(job.UID, name)
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	// The new pods are pending: count them now, so the status written at the end of this
	// reconcile is already right and the cache catching up does not call for another
	// write. (No event per creation either: at a thousand replicas those writes would
	// cost the API server as much as the pods.)
	for _, key := range created {
		o.status.ReplicaStatuses[key.Type].Active++
	}
	if len(created) > 0 {
		now := r.clock.Now()
		r.lastCreation.LoadOrStore(job.UID, now)
		r.lastAnyCreation.Store(now.UnixNano())
	}
	if len(errs) > 0 {
		r.event(job, corev1.EventTypeWarning, "PodCreationFailed", "%d pod(s) not created: %v", len(errs), errs[0])
	}
	return errors.Join(errs...)
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

// removeFinalizerPatch removes the tracking finalizer and leaves any other in place.
var removeFinalizerPatch = []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + TrackingFinalizer + `"]}}`)

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

// releaseOrphanedPods releases the pods of a job that no longer exists.
func (r *TFJobReconciler) releaseOrphanedPods(ctx context.Context, namespace, name string) error {
	list := &corev1.PodList{}
	err := r.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{tfv1.LabelJobName: name}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	var orphans []*corev1.Pod
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.Kind == "TFJob" && ref.Name == name {
			orphans = append(orphans, &list.Items[i])
		}
	}
	return r.releasePods(ctx, orphans)
}

// ensureService creates the job's headless Service unless it exists.
func (r *TFJobReconciler) ensureService(ctx context.Context, job *tfv1.TFJob) error {
	svc := &corev1.Service{}
	err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}, svc)
	if err == nil {
		if !metav1.IsControlledBy(svc, job) {
			return fmt.Errorf("service %s exists and does not belong to the job", job.Name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading service: %w", err)
	}
	if err := r.Create(ctx, constructService(job)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating service %s: %w", job.Name, err)
	}
	return nil
}
