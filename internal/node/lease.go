package node

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// renewLease creates or renews the node's Lease in kube-node-lease, owned by the Node
// so it goes with it. The node lifecycle controller reads its renew time as the node's
// heartbeat.
func renewLease(ctx context.Context, client kubernetes.Interface, node *corev1.Node, duration time.Duration) error {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: node.Name, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(node.Name),
				LeaseDurationSeconds: ptr.To(int32(duration / time.Second)),
				RenewTime:            &now,
			},
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the node lease: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the node lease: %w", err)
	}
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(duration / time.Second))
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renewing the node lease: %w", err)
	}
	return nil
}

// every calls f now and then every interval until ctx ends, retrying sooner after an
// error.
func every(ctx context.Context, interval time.Duration, f func(context.Context) error, onError func(error)) {
	for {
		next := interval
		if err := f(ctx); err != nil && ctx.Err() == nil {
			onError(err)
			next = min(interval, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}
