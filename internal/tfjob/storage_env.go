package tfjob

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// StorageEnv is the S3 endpoint and credentials, each read by the kubelet from the
// storage Secret: never literal in a pod spec. The controller's pods and the CLI's
// TensorBoard over runs set it alike.
func StorageEnv(secret corev1.LocalObjectReference) []corev1.EnvVar {
	var env []corev1.EnvVar
	fromSecret := func(name, key string, optional bool) {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: secret, Key: key, Optional: ptr.To(optional)},
		}})
	}
	fromSecret(EnvS3Endpoint, SecretKeyEndpoint, false)
	fromSecret(EnvAccessKeyID, SecretKeyAccessKeyID, false)
	fromSecret(EnvSecretAccessKey, SecretKeySecretAccessKey, false)
	fromSecret(EnvRegion, SecretKeyRegion, true)
	fromSecret(EnvS3Insecure, SecretKeyInsecure, true)
	return env
}
