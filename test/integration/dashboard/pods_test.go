package dashboard

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// kubelet plays the kubelet: it writes the pod status a kubelet would.
func kubelet() testutil.Kubelet { return testutil.Kubelet{Client: k8sClient} }

// createJob creates a job as the administrator.
func createJob(t *testing.T, job *tfv1.TFJob) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatalf("creating tfjob %s: %v", job.Name, err)
	}
}

// waitPods waits until the controller created the job's pods, named.
func waitPods(t *testing.T, ns, job string, names ...string) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("pods %v", names), func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
			return false, err
		}
		var have []string
		for _, p := range list.Items {
			have = append(have, p.Name)
		}
		slices.Sort(have)
		want := slices.Sorted(slices.Values(names))
		return slices.Equal(have, want), nil
	})
}

// setReady marks a pod Running and Ready, its container restarted restarts times
// (the last run ended with lastExit).
func setReady(t *testing.T, ns, pod string, restarts, lastExit int32) {
	t.Helper()
	kubelet().WritePodStatus(t, ns, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		s := corev1.ContainerStatus{
			Name: p.Spec.Containers[0].Name, Ready: true, RestartCount: restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}
		if restarts > 0 {
			s.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: lastExit, Reason: "OOMKilled", FinishedAt: metav1.Now()}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
	})
}

// getJob reads a job as the administrator.
func getJob(t *testing.T, ns, name string) *tfv1.TFJob {
	t.Helper()
	job := &tfv1.TFJob{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		t.Fatalf("reading tfjob %s: %v", name, err)
	}
	return job
}
