package jobs

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// StorageSecretName names the Secret that holds a job's S3 settings: one per job, so
// that no two jobs share one, and none outlives its job (the job owns it).
func StorageSecretName(job string) string {
	return job + "-storage"
}

// ConstructStorageSecret builds the Secret the agent of job reads its S3 settings
// from. clusterEndpoint, when set, is the endpoint as pods reach it, if not as the CLI
// does.
func ConstructStorageSecret(namespace, job string, cfg storage.Config, clusterEndpoint string) *corev1.Secret {
	endpoint, insecure := cfg.Endpoint, cfg.Insecure
	if clusterEndpoint != "" {
		endpoint, insecure = EndpointScheme(clusterEndpoint, cfg.Insecure)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      StorageSecretName(job),
			Namespace: namespace,
			Labels:    map[string]string{LabelManagedBy: ManagedBy, tfv1.LabelJobName: job},
		},
		Type: corev1.SecretTypeOpaque,
		Data: SecretData(endpoint, insecure, cfg),
	}
}

// CheckStorageSecret checks the Secret of --storage-secret: it exists and holds the
// keys the job's pods cannot start without. A user who may not read Secrets (a
// notebook's account) cannot check it, and the job's pods are left to read it.
func CheckStorageSecret(ctx context.Context, c client.Client, namespace, name string) error {
	got := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, got)
	switch {
	case apierrors.IsForbidden(err):
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--storage-secret %s: no such Secret in namespace %s", name, namespace)
	case err != nil:
		return fmt.Errorf("--storage-secret %s: reading it: %w", name, err)
	}
	var missing []string
	for _, key := range []string{tfjob.SecretKeyEndpoint, tfjob.SecretKeyAccessKeyID, tfjob.SecretKeySecretAccessKey} {
		if len(got.Data[key]) == 0 {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--storage-secret %s: the Secret has no %s, which the job's pods read their S3 settings from (keys %s, %s, %s, and optionally %s, %s)",
			name, strings.Join(missing, ", "), tfjob.SecretKeyEndpoint, tfjob.SecretKeyAccessKeyID, tfjob.SecretKeySecretAccessKey,
			tfjob.SecretKeyRegion, tfjob.SecretKeyInsecure)
	}
	return nil
}

// CreateStorageSecret creates a job's Secret. One of the name already there is
// replaced when it is stale: tfk8s's, and owned by no job that exists (left by a
// deleted job of the same name that the garbage collector has not removed yet, or by a
// submit interrupted before it created its job). Any other is an error.
func CreateStorageSecret(ctx context.Context, c client.Client, want *corev1.Secret) (*corev1.Secret, error) {
	created := want.DeepCopy()
	err := c.Create(ctx, created)
	if !apierrors.IsAlreadyExists(err) {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("creating secret %s for the job's S3 settings: %w (--storage-secret names a Secret of them you have instead)", want.Name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("creating secret %s: %w", want.Name, err)
		}
		return created, nil
	}
	got := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		return nil, fmt.Errorf("reading secret %s: %w", want.Name, err)
	}
	if err := checkStale(ctx, c, got); err != nil {
		return nil, err
	}
	err = c.Delete(ctx, got, client.Preconditions{UID: &got.UID})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("deleting the stale secret %s: %w", got.Name, err)
	}
	created = want.DeepCopy()
	if err := c.Create(ctx, created); err != nil {
		return nil, fmt.Errorf("creating secret %s in place of a stale one: %w", want.Name, err)
	}
	return created, nil
}

// checkStale returns nil if the existing Secret may be replaced, else an error that
// says why not.
func checkStale(ctx context.Context, c client.Client, s *corev1.Secret) error {
	if s.Labels[LabelManagedBy] != ManagedBy {
		return fmt.Errorf("secret %s/%s exists and was not made by tfk8s: delete or rename it", s.Namespace, s.Name)
	}
	job := &tfv1.TFJob{}
	err := c.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Labels[tfv1.LabelJobName]}, job)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the tfjob of secret %s: %w", s.Name, err)
	case len(s.OwnerReferences) == 0 || ownedBy(s, job.UID):
		// Unowned while its job exists: that job's submit is about to take it.
		return fmt.Errorf("secret %s/%s belongs to the existing tfjob %s", s.Namespace, s.Name, job.Name)
	}
	return nil
}

// ownedBy reports whether obj has an owner reference to uid.
func ownedBy(obj metav1.Object, uid types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// OwnSecret makes the job the owner of its Secret, so that the garbage collector
// deletes the Secret with the job. A Secret gone meanwhile (a refused submit of the
// same name deleting the one it made) is created again, owned.
func OwnSecret(ctx context.Context, c client.Client, secret *corev1.Secret, job *tfv1.TFJob) error {
	owner := metav1.OwnerReference{APIVersion: tfv1.GroupVersion.String(), Kind: "TFJob", Name: job.Name, UID: job.UID}
	raced := func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err)
	}
	err := retry.OnError(retry.DefaultRetry, raced, func() error {
		got := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKeyFromObject(secret), got)
		if apierrors.IsNotFound(err) {
			got = secret.DeepCopy()
			got.ResourceVersion, got.UID = "", ""
			got.OwnerReferences = []metav1.OwnerReference{owner}
			return c.Create(ctx, got)
		}
		if err != nil || ownedBy(got, job.UID) {
			return err
		}
		got.OwnerReferences = []metav1.OwnerReference{owner}
		return c.Update(ctx, got)
	})
	if err != nil {
		return fmt.Errorf("making tfjob %s the owner of secret %s: %w", job.Name, secret.Name, err)
	}
	return nil
}

// DeleteOwnSecret deletes the Secret this submit created, and only that one: not a
// Secret of the same name that another submit made or took since.
func DeleteOwnSecret(ctx context.Context, c client.Client, created *corev1.Secret) error {
	err := c.Delete(ctx, created, client.Preconditions{UID: &created.UID, ResourceVersion: &created.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting secret %s again: %w", created.Name, err)
	}
	return nil
}

// EndpointScheme splits an endpoint given as a URL into host:port and whether it is
// plain HTTP; a bare host:port keeps insecure.
func EndpointScheme(endpoint string, insecure bool) (string, bool) {
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/"), true
	case strings.HasPrefix(endpoint, "https://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "https://"), "/"), false
	}
	return strings.TrimSuffix(endpoint, "/"), insecure
}
