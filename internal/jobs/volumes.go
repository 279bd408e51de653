package jobs

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// CheckVolumes refuses volumes the cluster cannot serve before anything is uploaded or
// created: a storage class or an existing claim that does not exist. (The controller
// fails such a job too, for manifests applied with kubectl.)
func CheckVolumes(ctx context.Context, c client.Client, job *tfv1.TFJob) error {
	for i, v := range job.Spec.Volumes {
		field := fmt.Sprintf("spec.volumes[%d] (%s)", i, v.Name)
		switch {
		case v.ExistingClaim != "":
			err := c.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: v.ExistingClaim}, &corev1.PersistentVolumeClaim{})
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: existing claim %q does not exist in namespace %s", field, v.ExistingClaim, job.Namespace)
			}
			if err != nil && !apierrors.IsForbidden(err) {
				return fmt.Errorf("%s: reading claim %s: %w", field, v.ExistingClaim, err)
			}
		case v.StorageClassName != nil && *v.StorageClassName != "":
			err := c.Get(ctx, client.ObjectKey{Name: *v.StorageClassName}, &storagev1.StorageClass{})
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s: storage class %q does not exist%s", field, *v.StorageClassName, knownClasses(ctx, c))
			}
			if err != nil && !apierrors.IsForbidden(err) {
				return fmt.Errorf("%s: reading storage class %s: %w", field, *v.StorageClassName, err)
			}
		}
	}
	return nil
}

// knownClasses lists the cluster's storage classes for an error message, if the user
// may list them.
func knownClasses(ctx context.Context, c client.Client) string {
	list := &storagev1.StorageClassList{}
	if err := c.List(ctx, list); err != nil || len(list.Items) == 0 {
		return ""
	}
	names := make([]string, len(list.Items))
	for i, sc := range list.Items {
		names[i] = sc.Name
	}
	return " (the cluster has " + strings.Join(names, ", ") + ")"
}
