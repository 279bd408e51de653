package controller

import (
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// isRetryableExitCode reports whether an exit code calls for a retry under ExitCode:
// 128 and above means the process was killed by a signal (137: SIGKILL, often the OOM
// killer; 143: SIGTERM), which says nothing against the program; 1 to 127 are the
// program's own verdict.
func isRetryableExitCode(code int32) bool { return code >= 128 }

// shouldRetry reports whether a failed pod of a replica with policy p is re-created
// rather than failing the replica for good.
func shouldRetry(p tfv1.RestartPolicy, pod *corev1.Pod) bool {
	switch p {
	case tfv1.RestartPolicyAlways, tfv1.RestartPolicyOnFailure:
		// The kubelet restarts the containers; a pod that failed as a whole (evicted,
		// deadline, node lost) is re-created.
		return true
	case tfv1.RestartPolicyExitCode:
		if isDisruption(pod) {
			return true
		}
		t := tfjob.Terminated(pod)
		// A pod that failed without its container ever exiting failed around it.
		return t == nil || isRetryableExitCode(t.ExitCode)
	default:
		return false
	}
}

// containerRestarts is the number of times the kubelet restarted the pod's containers.
func containerRestarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
