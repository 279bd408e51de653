package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestSameNameAcrossAPIsFailsTheSecond: a tfk8s.io and a kubeflow.org TFJob of one
// name in one namespace would want the same pod and Service names. Whichever came
// second fails with JobNameTaken, naming the other, and the first keeps its pods and
// Service, none of them taken over: in both orders.
func TestSameNameAcrossAPIsFailsTheSecond(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()

	// tfk8s.io first.
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("first", ns).Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	before := waitPods(t, ns, "first", "first-worker-0")
	owner := before["first-worker-0"].OwnerReferences
	if err := k8sClient.Create(ctx, makeKubeflowJob(ns, "first", 1, 1)); err != nil {
		t.Fatal(err)
	}
	failed := waitKubeflowCondition(t, ns, "first", "Failed")
	if c := kubeflowCondition(failed, "Failed"); !strings.Contains(c.Message, "tfjob.tfk8s.io/first") {
		t.Errorf("the second job's Failed condition does not name the first: %q", c.Message)
	}
	checkUntouched(t, ns, "first", before, owner)

	// kubeflow.org first.
	if err := k8sClient.Create(ctx, makeKubeflowJob(ns, "second", 0, 1)); err != nil {
		t.Fatal(err)
	}
	before = waitPods(t, ns, "second", "second-chief-0", "second-worker-0")
	owner = before["second-chief-0"].OwnerReferences
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("second", ns).Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	job := waitCondition(t, ns, "second", tfv1.JobFailed)
	c := findJobCondition(job, tfv1.JobFailed)
	if c.Reason != tfv1.ReasonJobNameTaken || !strings.Contains(c.Message, "tfjob.kubeflow.org/second") {
		t.Errorf("the second job failed with %s %q, want %s naming tfjob.kubeflow.org/second", c.Reason, c.Message, tfv1.ReasonJobNameTaken)
	}
	checkUntouched(t, ns, "second", before, owner)
}

// checkUntouched checks that the first job's pods are the ones it had, still its own,
// and that no other pod and no Service of another owner has its name.
func checkUntouched(t *testing.T, ns, name string, before map[string]*corev1.Pod, owner []metav1.OwnerReference) {
	t.Helper()
	list := &corev1.PodList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, pod := range list.Items {
		if !strings.HasPrefix(pod.Name, name+"-") {
			continue
		}
		if b := before[pod.Name]; b == nil || b.UID != pod.UID || metav1.GetControllerOf(&pod).UID != owner[0].UID {
			t.Errorf("pod %s is not the first job's pod it was (controller %v)", pod.Name, metav1.GetControllerOf(&pod))
		}
	}
	svc := &corev1.Service{}
	if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, svc); err == nil && metav1.GetControllerOf(svc).UID != owner[0].UID {
		t.Errorf("Service %s is controlled by %v, not by the first job", name, metav1.GetControllerOf(svc))
	}
}
