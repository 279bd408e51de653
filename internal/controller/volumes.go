package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// ensureClaims makes sure every volume's claim exists before the job's pods are
// created: it creates the claims tfk8s owns and checks the existing claims and storage
// classes named. It reads the API server directly rather than a cache, and only when
// pods are about to be created, so that the controller watches no claims or classes.
// A volume that can never be served is returned as invalid, naming its field.
func (r *TFJobReconciler) ensureClaims(ctx context.Context, job *tfv1.TFJob) (invalid string, err error) {
	for i := range job.Spec.Volumes {
		v := &job.Spec.Volumes[i]
		field := fmt.Sprintf("spec.volumes[%d]", i)
		if v.ExistingClaim != "" {
			err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: v.ExistingClaim}, &corev1.PersistentVolumeClaim{})
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("%s.existingClaim: claim %q does not exist in namespace %s", field, v.ExistingClaim, job.Namespace), nil
			}
			if err != nil {
				return "", fmt.Errorf("reading claim %s: %w", v.ExistingClaim, err)
			}
			continue
		}
		if sc := v.StorageClassName; sc != nil && *sc != "" {
			err := r.reader().Get(ctx, client.ObjectKey{Name: *sc}, &storagev1.StorageClass{})
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("%s.storageClassName: storage class %q does not exist", field, *sc), nil
			}
			if err != nil {
				return "", fmt.Errorf("reading storage class %s: %w", *sc, err)
			}
		}
		err := r.Create(ctx, build.Claim(job, v))
		if apierrors.IsAlreadyExists(err) {
			invalid, err = r.checkClaimReuse(ctx, job, i)
			if invalid != "" || err != nil {
				return invalid, err
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("creating claim %s: %w", build.ClaimName(job, v), err)
		}
	}
	return "", nil
}

// checkClaimReuse reads the claim that already holds the name of the job's volume i,
// and says why it is not mounted, or "" when claimForeign finds it is the job's.
func (r *TFJobReconciler) checkClaimReuse(ctx context.Context, job *tfv1.TFJob, i int) (invalid string, err error) {
	v := &job.Spec.Volumes[i]
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: build.ClaimName(job, v)}, claim); err != nil {
		return "", fmt.Errorf("reading claim %s: %w", build.ClaimName(job, v), err)
	}
	if whose := claimForeign(job, v, claim); whose != "" {
		return fmt.Sprintf("spec.volumes[%d].name %q: claim %s already exists and %s; the controller mounts only a claim "+
			"it created for this job: rename the volume or the job, or ask an admin to mount the claim with existingClaim",
			i, v.Name, claim.Name, whose), nil
	}
	return "", nil
}

// claimForeign says whose the existing claim of a volume tfk8s would create is, when it
// is not the job's: a name the job chose must not open another's claim (a notebook
// nb-b's home is nb-b-home, the claim of volume "home" of a job "nb-b"). A claim is the
// job's when its controller is the job (by UID), or, for a retained volume, when it
// has no owner and tfk8s labelled it as this job name's volume: the claim a deleted
// job of the name left, which only those who may write claims could label so.
func claimForeign(job *tfv1.TFJob, v *tfv1.JobVolume, claim *corev1.PersistentVolumeClaim) string {
	owner := metav1.GetControllerOf(claim)
	switch {
	case owner != nil && owner.UID == job.UID:
		return ""
	case owner != nil:
		return fmt.Sprintf("belongs to %s %s", owner.Kind, owner.Name)
	case len(claim.OwnerReferences) > 0:
		return "has owners but no controller"
	case v.Retain && claim.Labels[tfv1.LabelJobName] == job.Name && claim.Labels[tfv1.LabelVolume] == v.Name:
		return ""
	case v.Retain:
		return fmt.Sprintf("is not labelled %s=%s, %s=%s as a retained claim of this job", tfv1.LabelJobName, job.Name, tfv1.LabelVolume, v.Name)
	default:
		return "is owned by nothing"
	}
}

// reader reads around the cache: APIReader when set, else the client.
func (r *TFJobReconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
