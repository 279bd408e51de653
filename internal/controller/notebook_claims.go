package controller

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// namedClaim is a claim a job mounts by name, and the field that names it.
type namedClaim struct {
	field, name string
}

// namedClaims lists the claims a job mounts by name: spec.volumes[].existingClaim and
// its templates' persistentVolumeClaim volumes, less those its own spec.volumes
// create, which decideClaims checks as the job's.
func namedClaims(job *tfv1.TFJob) []namedClaim {
	own := map[string]bool{}
	var out []namedClaim
	for i := range job.Spec.Volumes {
		v := &job.Spec.Volumes[i]
		if v.ExistingClaim == "" {
			own[build.ClaimName(job, v)] = true
			continue
		}
		out = append(out, namedClaim{field: fmt.Sprintf("spec.volumes[%d].existingClaim", i), name: v.ExistingClaim})
	}
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		for i, v := range spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim == nil || own[v.PersistentVolumeClaim.ClaimName] {
				continue
			}
			field := fmt.Sprintf("spec.tfReplicaSpecs.%s.template.spec.volumes[%d].persistentVolumeClaim.claimName", rt, i)
			out = append(out, namedClaim{field: field, name: v.PersistentVolumeClaim.ClaimName})
		}
	}
	return out
}

// notebookAccount is the ServiceAccount name a job's recorded creator names in the
// job's own namespace, or "" when the creator is no ServiceAccount of it.
func notebookAccount(job *tfv1.TFJob) string {
	prefix := "system:serviceaccount:" + job.Namespace + ":"
	creator := job.Annotations[tfv1.AnnotationCreator]
	if !strings.HasPrefix(creator, prefix) {
		return ""
	}
	return strings.TrimPrefix(creator, prefix)
}

// claimMountable says whether a notebook's job may mount the claim without asking the
// API server: the notebook's account owns it (by UID), or it is labelled shared.
func claimMountable(claim *corev1.PersistentVolumeClaim, account *corev1.ServiceAccount) bool {
	if claim.Labels[tfv1.LabelSharedClaim] == "true" {
		return true
	}
	for _, ref := range claim.OwnerReferences {
		if ref.APIVersion == "v1" && ref.Kind == "ServiceAccount" && ref.Name == account.Name && ref.UID == account.UID {
			return true
		}
	}
	return false
}

// notebookView is what observe reads of a notebook's job's named claims: whether it
// read at all, the notebook's account (nil when the job's creator is no notebook
// account), each claim the job names (nil when absent), and, for a claim that is
// neither the notebook's nor shared, whether the account may read it.
type notebookView struct {
	read    bool
	account *corev1.ServiceAccount
	claims  map[string]*corev1.PersistentVolumeClaim
	mayGet  map[string]bool
}

// readNotebookClaims reads what holds a notebook's job to the claims admission let it
// name, now that its pods are about to mount them: a claim that did not exist at
// admission (say, the home of a notebook not yet started) was not checked then. A job
// of any other creator reads nothing. It reads around the cache, as readVolumes does,
// and only when observe finds pods about to be created (startsPods).
func (r *TFJobReconciler) readNotebookClaims(ctx context.Context, job *tfv1.TFJob) (notebookView, error) {
	v := notebookView{read: true}
	name := notebookAccount(job)
	claims := namedClaims(job)
	if name == "" || len(claims) == 0 {
		return v, nil
	}
	account := &corev1.ServiceAccount{}
	err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, account)
	switch {
	case apierrors.IsNotFound(err):
		return v, nil
	case err != nil:
		return v, fmt.Errorf("reading serviceaccount %s: %w", name, err)
	case account.Labels[tfv1.LabelNotebook] == "":
		return v, nil
	}
	v.account, v.claims, v.mayGet = account, map[string]*corev1.PersistentVolumeClaim{}, map[string]bool{}
	for _, c := range claims {
		claim := &corev1.PersistentVolumeClaim{}
		err := r.reader().Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: c.name}, claim)
		if apierrors.IsNotFound(err) {
			v.claims[c.name] = nil
			return v, nil // the job fails on it: nothing more to read
		}
		if err != nil {
			return v, fmt.Errorf("reading claim %s: %w", c.name, err)
		}
		v.claims[c.name] = claim
		if claimMountable(claim, account) {
			continue
		}
		if v.mayGet[c.name], err = r.accountMayGetClaim(ctx, job.Namespace, name, c.name); err != nil {
			return v, err
		}
		if !v.mayGet[c.name] {
			return v, nil
		}
	}
	return v, nil
}

// decideNotebookClaims says why a notebook's job may not mount a claim it names, or "":
// each must exist, and be the notebook account's, shared, or readable by that account.
// unread: observe did not read what a claim needs judging by, and the pods wait for a
// reconcile that does, rather than mount a claim nobody checked.
func decideNotebookClaims(job *tfv1.TFJob, v notebookView) (invalid string, unread bool) {
	if !v.read {
		return "", notebookAccount(job) != "" && len(namedClaims(job)) > 0
	}
	if v.account == nil {
		return "", false
	}
	name := v.account.Name
	for _, c := range namedClaims(job) {
		claim, read := v.claims[c.name]
		switch {
		case !read:
			return "", true
		case claim == nil:
			return fmt.Sprintf("%s: claim %s does not exist; a job of notebook account %s mounts only claims that exist when its pods are made",
				c.field, c.name, name), false
		case !claimMountable(claim, v.account) && !v.mayGet[c.name]:
			return fmt.Sprintf("%s: claim %s: a job of notebook account %s may mount only the claims its notebook owns, those labelled %s=true, and those that account may read",
				c.field, c.name, name, tfv1.LabelSharedClaim), false
		}
	}
	return "", false
}

// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// accountMayGetClaim asks the API server whether ServiceAccount account of ns may get
// claim, as the admission policy's authorizer check does for the requester.
func (r *TFJobReconciler) accountMayGetClaim(ctx context.Context, ns, account, claim string) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + account,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "get", Resource: "persistentvolumeclaims", Name: claim,
		},
	}}
	if err := r.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether %s may get claim %s: %w", account, claim, err)
	}
	return review.Status.Allowed, nil
}
