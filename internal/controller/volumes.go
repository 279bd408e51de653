package controller

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// volumeView is what observe reads of each of the job's volumes, in spec.volumes'
// order: the claim it names or tfk8s would create (nil when absent), and whether the
// storage class it names exists.
type volumeView struct {
	claim        *corev1.PersistentVolumeClaim
	classMissing bool
}

// readVolumes reads the claims and storage classes the job's volumes name; observe
// calls it only when its pods are about to be created (startsPods). It reads the API
// server directly rather than a cache, so that the controller watches no claims or
// classes, and stops at the first volume that can never be served.
func (r *TFJobReconciler) readVolumes(ctx context.Context, job *tfv1.TFJob) ([]volumeView, error) {
	if len(job.Spec.Volumes) == 0 {
		return nil, nil
	}
	out := make([]volumeView, len(job.Spec.Volumes))
	for i := range job.Spec.Volumes {
		v := &job.Spec.Volumes[i]
		name := cmp.Or(v.ExistingClaim, build.ClaimName(job, v))
		if sc := v.StorageClassName; v.ExistingClaim == "" && sc != nil && *sc != "" {
			err := r.reader().Get(ctx, client.ObjectKey{Name: *sc}, &storagev1.StorageClass{})
			if apierrors.IsNotFound(err) {
				out[i].classMissing = true
				return out, nil
			}
			if err != nil {
				return nil, fmt.Errorf("reading storage class %s: %w", *sc, err)
			}
		}
		claim := &corev1.PersistentVolumeClaim{}
		err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, claim)
		if err == nil {
			out[i].claim = claim
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading claim %s: %w", name, err)
		}
	}
	return out, nil
}

// startsPods reports whether decide will find pods of the job to create, as planStart
// does: the job has not finished, is neither suspended nor held by Kueue, holds its
// name, and a replica to start now has no pod (missingReplicas, which waits for the
// parameter servers under PSFirst). Observe reads around the cache what creating pods
// needs only then, so that a job waiting costs the API server nothing per reconcile.
func startsPods(w *world) bool {
	job := w.job
	if w.rival != "" || jobSuspended(job) {
		return false
	}
	if kp := decideKueue(job, w.pods, w.kueue); kp.holdReason != "" || kp.unavailable != "" {
		return false
	}
	o := observePods(job, w.pods, w.now)
	return !jobFinished(o.status) && len(missingReplicas(job, o, podNames(w.foreign))) > 0
}

// podNames are the names of pods.
func podNames(pods []*corev1.Pod) sets.Set[string] {
	names := sets.New[string]()
	for _, pod := range pods {
		names.Insert(pod.Name)
	}
	return names
}

// decideClaims returns the claims to create before the job's pods, or why a volume can
// never be served, naming its field: an existing claim or a storage class that does not
// exist, or a claim of the name tfk8s would create that is not the job's. unread:
// observe did not read the volumes, and the pods wait for a reconcile that does.
func decideClaims(job *tfv1.TFJob, views []volumeView) (create []*corev1.PersistentVolumeClaim, invalid string, unread bool) {
	if len(views) < len(job.Spec.Volumes) {
		return nil, "", true
	}
	for i, vv := range views {
		v := &job.Spec.Volumes[i]
		field := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case vv.classMissing:
			return nil, fmt.Sprintf("%s.storageClassName: storage class %q does not exist", field, *v.StorageClassName), false
		case v.ExistingClaim != "" && vv.claim == nil:
			return nil, fmt.Sprintf("%s.existingClaim: claim %q does not exist in namespace %s", field, v.ExistingClaim, job.Namespace), false
		case v.ExistingClaim != "":
		case vv.claim == nil:
			create = append(create, build.Claim(job, v))
		default:
			if whose := claimForeign(job, v, vv.claim); whose != "" {
				return nil, fmt.Sprintf("%s.name %q: claim %s already exists and %s; the controller mounts only a claim "+
					"it created for this job: rename the volume or the job, or ask an admin to mount the claim with existingClaim",
					field, v.Name, vv.claim.Name, whose), false
			}
		}
	}
	return create, "", false
}

// createClaims creates the claims decideClaims planned. One created meanwhile by
// someone else is an error: the next reconcile reads whose it is.
func (r *TFJobReconciler) createClaims(ctx context.Context, claims []*corev1.PersistentVolumeClaim) error {
	for _, claim := range claims {
		if err := r.Create(ctx, claim); err != nil {
			return fmt.Errorf("creating claim %s: %w", claim.Name, err)
		}
	}
	return nil
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
