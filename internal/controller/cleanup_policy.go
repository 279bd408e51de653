package controller

import (
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// podsToClean returns the pods runPolicy.cleanPodPolicy deletes once the job has
// finished: under Running (the default), every pod still pending or running — the
// parameter servers, which never exit by themselves, and whatever else is left; under
// All, every pod; under None, none.
func podsToClean(job *tfv1.TFJob, pods []*corev1.Pod) []*corev1.Pod {
	policy := tfv1.CleanPodPolicyRunning
	if p := job.Spec.RunPolicy.CleanPodPolicy; p != nil {
		policy = *p
	}
	var out []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		switch policy {
		case tfv1.CleanPodPolicyAll:
			out = append(out, pod)
		case tfv1.CleanPodPolicyRunning:
			if !isTerminal(pod) {
				out = append(out, pod)
			}
		}
	}
	return out
}
