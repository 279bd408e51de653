package tensorboard

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// pollInterval is how often Replace looks whether the old pod is gone.
var pollInterval = 500 * time.Millisecond

// Replace creates the pod, first deleting one of the same name (the same runs, left
// by an earlier tfk8s tensorboard) and waiting until it is gone, at most timeout, so
// that the pod forwarded to is the new one with its full deadline.
// It returns the pod created.
func Replace(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, timeout time.Duration) (*corev1.Pod, error) {
	if err := Delete(ctx, cs, pod.Namespace, pod.Name); err != nil {
		return nil, err
	}
	if err := waitGone(ctx, cs, pod.Namespace, pod.Name, timeout); err != nil {
		return nil, err
	}
	created, err := cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return created, nil
}

// CreateSecret creates the pod's own Secret, in place of one an earlier pod of the
// same runs owned, which the garbage collector may not have deleted yet. Until it
// exists, the kubelet retries the mirrors that read it.
func CreateSecret(ctx context.Context, cs kubernetes.Interface, secret *corev1.Secret) error {
	secrets := cs.CoreV1().Secrets(secret.Namespace)
	if err := secrets.Delete(ctx, secret.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the earlier secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// Delete deletes the pod at once (its containers only read), if it exists; the
// garbage collector deletes its own Secret after it.
func Delete(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	err := cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// waitGone waits until the pod does not exist, at most timeout.
func waitGone(ctx context.Context, cs kubernetes.Interface, namespace, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		_, err := cs.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("pod %s/%s still exists %s after it was deleted", namespace, name, timeout)
			}
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}
