package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Labels of the storage Secrets the CLI makes, so that it only ever rewrites its own.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedByCLI   = "tfk8s"
)

// secretAction is what ensureSecret did.
type secretAction string

const (
	secretCreated    secretAction = "created"
	secretUnchanged  secretAction = "unchanged"
	secretConfigured secretAction = "configured"
)

// storageSecretName names the Secret holding the credentials for an endpoint: one per
// endpoint and access key, shared by every job of the namespace that uses them.
func storageSecretName(endpoint, accessKeyID string) string {
	sum := sha256.Sum256([]byte(endpoint + "\n" + accessKeyID))
	return "tfk8s-s3-" + hex.EncodeToString(sum[:])[:10]
}

// constructStorageSecret builds the Secret the agent reads its S3 settings from.
// clusterEndpoint, when set, is the endpoint as pods reach it, if not as the CLI does.
func constructStorageSecret(namespace string, cfg storage.Config, clusterEndpoint string) *corev1.Secret {
	endpoint, insecure := cfg.Endpoint, cfg.Insecure
	if clusterEndpoint != "" {
		endpoint, insecure = endpointScheme(clusterEndpoint, cfg.Insecure)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      storageSecretName(endpoint, cfg.AccessKeyID),
			Namespace: namespace,
			Labels:    map[string]string{labelManagedBy: managedByCLI},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			controller.SecretKeyEndpoint:        []byte(endpoint),
			controller.SecretKeyAccessKeyID:     []byte(cfg.AccessKeyID),
			controller.SecretKeySecretAccessKey: []byte(cfg.SecretAccessKey),
			controller.SecretKeyRegion:          []byte(cfg.Region),
			controller.SecretKeyInsecure:        []byte(strconv.FormatBool(insecure)),
		},
	}
}

// ensureSecret creates the Secret, or reuses the one of the same name, updating its
// data if the credentials changed (a rotated secret key). A Secret of that name that
// tfk8s did not make is left alone, and is an error.
func ensureSecret(ctx context.Context, c client.Client, want *corev1.Secret) (secretAction, error) {
	got := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want); err != nil {
			return "", fmt.Errorf("creating secret %s: %w", want.Name, err)
		}
		return secretCreated, nil
	case err != nil:
		return "", fmt.Errorf("reading secret %s: %w", want.Name, err)
	case got.Labels[labelManagedBy] != managedByCLI:
		return "", fmt.Errorf("secret %s/%s exists and was not made by tfk8s: delete or rename it", got.Namespace, got.Name)
	case maps.EqualFunc(got.Data, want.Data, func(a, b []byte) bool { return string(a) == string(b) }):
		return secretUnchanged, nil
	}
	got.Data = want.Data
	if err := c.Update(ctx, got); err != nil {
		return "", fmt.Errorf("updating secret %s: %w", want.Name, err)
	}
	return secretConfigured, nil
}
