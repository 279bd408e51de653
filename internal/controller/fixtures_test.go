package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// buildPod is ConstructPod for a replica that must build.
func buildPod(t *testing.T, job *tfv1.TFJob, rt tfv1.ReplicaType, index int32, opts PodOptions) *corev1.Pod {
	t.Helper()
	pod, err := ConstructPod(job, rt, index, opts)
	if err != nil {
		t.Fatalf("ConstructPod(%s, %d): %v", rt, index, err)
	}
	return pod
}
