package provisioner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// annDefaultClass marks the StorageClass that claims naming no class get.
const annDefaultClass = "storageclass.kubernetes.io/is-default-class"

// storageClass is the tfk8s-local StorageClass. It is the default class, so that a
// claim naming no class gets a local volume, as it did from the home-made node. Its
// volumes wait for the claim's first pod, so that the scheduler picks their node, and
// go with their claim.
func storageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: ClassName, Annotations: map[string]string{annDefaultClass: "true"}},
		Provisioner:       Name,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// classOutdated reports whether a StorageClass differs from want in a field the API
// server does not let change: the home-made node's class binds at once, and a claim of
// it would name no node for any provisioner to answer.
func classOutdated(have, want *storagev1.StorageClass) bool {
	return have.Provisioner != want.Provisioner ||
		ptr.Deref(have.ReclaimPolicy, corev1.PersistentVolumeReclaimDelete) != *want.ReclaimPolicy ||
		ptr.Deref(have.VolumeBindingMode, storagev1.VolumeBindingImmediate) != *want.VolumeBindingMode
}

// ensureStorageClass creates the tfk8s-local StorageClass, or replaces an outdated one
// of ours. A class of that name from another provisioner is the user's, and an error.
// Several nodes may do this at once: the deletion is of the outdated class only, and
// the class another node created is as good as ours.
func ensureStorageClass(ctx context.Context, client kubernetes.Interface) error {
	classes := client.StorageV1().StorageClasses()
	want := storageClass()
	have, err := classes.Get(ctx, ClassName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return createStorageClass(ctx, client, want)
	case err != nil:
		return fmt.Errorf("reading StorageClass %s: %w", ClassName, err)
	case have.Provisioner != Name:
		return fmt.Errorf("StorageClass %s exists with provisioner %s, not %s", ClassName, have.Provisioner, Name)
	case !classOutdated(have, want):
		return nil
	}
	klog.FromContext(ctx).Info("Replacing the outdated StorageClass", "storageClass", ClassName,
		"volumeBindingMode", ptr.Deref(have.VolumeBindingMode, ""))
	err = classes.Delete(ctx, ClassName, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(have.UID))})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting the outdated StorageClass %s: %w", ClassName, err)
	}
	return createStorageClass(ctx, client, want)
}

// createStorageClass creates sc; one that exists already is fine.
func createStorageClass(ctx context.Context, client kubernetes.Interface, sc *storagev1.StorageClass) error {
	_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating StorageClass %s: %w", sc.Name, err)
	}
	return nil
}
