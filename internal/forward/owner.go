package forward

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Owner is what a pod must belong to for a forward to reach it. A label says nothing of
// who made a pod: anyone who may create pods can label one as a notebook's, and a
// browser forwarded to it would hand that pod the notebook's token.
type Owner struct {
	// Deployment, when set, must control the ReplicaSet that controls the pod, each
	// checked by UID.
	Deployment *appsv1.Deployment
	// Pod, when set, is the UID of the only pod that may be reached: one the caller
	// created itself.
	Pod types.UID
}

// DeploymentOwner is the Owner of the pods of a Deployment.
func DeploymentOwner(d *appsv1.Deployment) Owner { return Owner{Deployment: d} }

// PodOwner is the Owner that admits one pod, by UID.
func PodOwner(uid types.UID) Owner { return Owner{Pod: uid} }

// String names the owner, for messages.
func (o Owner) String() string {
	switch {
	case o.Deployment != nil:
		return fmt.Sprintf("Deployment %s", o.Deployment.Name)
	case o.Pod != "":
		return fmt.Sprintf("pod UID %s", o.Pod)
	default:
		return "nothing"
	}
}

// notOwned says why pod is not the owner's, or "" when it is; rs is the ReplicaSet
// named by the pod's controller reference (nil when there is none or it is gone).
// An Owner naming nothing owns no pod, so that a caller who forgets to say is refused.
func (o Owner) notOwned(pod *corev1.Pod, rs *appsv1.ReplicaSet) string {
	switch {
	case o.Pod != "":
		if pod.UID != o.Pod {
			return "is not the pod this command created"
		}
		return ""
	case o.Deployment == nil:
		return "has no owner to check"
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" {
		return "is not controlled by a ReplicaSet"
	}
	if rs == nil || rs.UID != ref.UID {
		return fmt.Sprintf("is controlled by ReplicaSet %s, which no longer exists", ref.Name)
	}
	rsRef := metav1.GetControllerOf(rs)
	if rsRef == nil || rsRef.Kind != "Deployment" || rsRef.UID != o.Deployment.UID {
		return fmt.Sprintf("is controlled by ReplicaSet %s, which is not %s's", rs.Name, o)
	}
	return ""
}

// readReplicaSet reads the ReplicaSet controlling pod, or nil when the pod names none
// or it is gone: notOwned then says why the pod is not the owner's.
func readReplicaSet(ctx context.Context, cs kubernetes.Interface, o Owner, pod *corev1.Pod) (*appsv1.ReplicaSet, error) {
	ref := metav1.GetControllerOf(pod)
	if o.Deployment == nil || ref == nil || ref.Kind != "ReplicaSet" {
		return nil, nil
	}
	rs, err := cs.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ReplicaSet %s, which controls pod %s: %w", ref.Name, pod.Name, err)
	}
	return rs, nil
}
