package node

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// notify asks for the pod's status to be written; requests made while a write is
// pending are merged into it.
func (w *podWorker) notify() {
	select {
	case w.statusCh <- struct{}{}:
	default:
	}
}

// statusLoop writes the pod's status whenever notified, until quit closes.
func (w *podWorker) statusLoop(ctx context.Context, quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		case <-ctx.Done():
			return
		case <-w.statusCh:
			if err := w.syncStatus(ctx); err != nil {
				w.log.Error(err, "Writing pod status")
			}
		}
	}
}

// snapshot captures the pod's sandbox and container states.
func (w *podWorker) snapshot() podSnapshot {
	stopping := w.stopping()
	w.mu.Lock()
	defer w.mu.Unlock()
	snap := podSnapshot{
		HostIP:    w.m.opts.NodeIP,
		StartTime: w.startTime,
		Stopped:   stopping,
		Failed:    w.failed,
		Reason:    w.reason,
		Message:   w.message,
	}
	if w.sb != nil {
		snap.PodIP = w.sb.podIP
		snap.SandboxReady = w.sb.ready
	}
	for _, r := range w.inits {
		snap.InitStatuses = append(snap.InitStatuses, r.status())
	}
	for _, r := range w.containers {
		snap.Statuses = append(snap.Statuses, r.status())
	}
	return snap
}

// syncStatus writes the status derived from the current snapshot if it differs from
// the pod's, retrying on conflicts with a fresh copy of the pod.
func (w *podWorker) syncStatus(ctx context.Context) error {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	w.mu.Lock()
	gone := w.gone
	w.mu.Unlock()
	if gone {
		return nil
	}
	pods := w.m.client.CoreV1().Pods(w.currentPod().Namespace)
	pod := w.currentPod()
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		st := podStatus(pod, w.snapshot(), metav1.Now())
		if apiequality.Semantic.DeepEqual(pod.Status, st) {
			return nil
		}
		updated := pod.DeepCopy()
		updated.Status = st
		result, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			if fresh.UID != w.uid {
				return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
			}
			pod = fresh
			return err
		}
		if err == nil {
			w.adopt(result)
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		w.markGone()
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of pod %s: %w", pod.Name, err)
	}
	return nil
}

// adopt keeps a pod returned by the API server if it is newer than the one held, so the
// next status write starts from it.
func (w *podWorker) adopt(pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pod.DeletionTimestamp == nil || pod.DeletionTimestamp != nil {
		w.pod = pod
	}
}

// deleteFromAPI removes the stopped pod's object, as the kubelet does once its
// containers are gone.
func (w *podWorker) deleteFromAPI(ctx context.Context) {
	pod := w.currentPod()
	err := w.m.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.log.Error(err, "Deleting the stopped pod")
	}
}
