package provisioner

import (
	"context"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// dirOwner is who owns a volume's directory, and its mode.
type dirOwner struct {
	UID, GID int
	Mode     fs.FileMode
}

// Modes of a volume's directory: group-owned by the pods' fsGroup, whose files keep
// that group (setgid); else root's, which the pods read.
const (
	sharedMode = fs.ModeSetgid | 0o770
	rootMode   = 0o755
)

// ownerFor decides who owns the directory of claim, given the pods of its namespace.
// A claim is provisioned for its first pod (WaitForFirstConsumer), whose fsGroup is
// known: the directory is then root's and that group's, mode 02770, as the kubelet
// would leave it at mount. Where its consumers name no fsGroup, or differ, it is
// root's, mode 0755: its pods running as root (the TensorFlow image's user) write it
// and the others read it; a pod of another user sets fsGroup, as the notebook does.
// Not 0777: any user of any pod mounting it, and of the host, would write it.
func ownerFor(claim *corev1.PersistentVolumeClaim, pods []corev1.Pod) dirOwner {
	var group *int64
	consumers := 0
	for i := range pods {
		pod := &pods[i]
		if !consumes(pod, claim) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		consumers++
		var g *int64
		if pod.Spec.SecurityContext != nil {
			g = pod.Spec.SecurityContext.FSGroup
		}
		if g == nil || (group != nil && *group != *g) {
			return dirOwner{Mode: rootMode}
		}
		group = g
	}
	if consumers == 0 {
		return dirOwner{Mode: rootMode}
	}
	return dirOwner{GID: int(*group), Mode: sharedMode}
}

// consumes reports whether pod mounts claim: by its name, or as the claim of one of
// its generic ephemeral volumes (named <pod>-<volume>).
func consumes(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name:
			return true
		case v.Ephemeral != nil && pod.Name+"-"+v.Name == claim.Name:
			return true
		}
	}
	return false
}

// claimPods lists the pods of claim's namespace.
func claimPods(ctx context.Context, client kubernetes.Interface, claim *corev1.PersistentVolumeClaim) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(claim.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of namespace %s for the claim's fsGroup: %w", claim.Namespace, err)
	}
	return list.Items, nil
}
