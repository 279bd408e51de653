package kueue

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/kueueproc"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// Kueue's built-in kubeflow.org/tfjob integration queues kubeflow.org TFJobs that tfk8s
// runs, beside tfk8s.io ones queued through tfk8s's external framework, in one
// ClusterQueue of 3 CPUs, each job asking for all 3, the third of lower priority. A Kubeflow job created unsuspended
// is suspended by Kueue's webhook, admitted, and started with the flavor's node
// selector; the next two jobs, one of each API, wait with no pod until the job ahead
// finishes. (A deleted job frees its quota too, but only once the garbage collector
// deletes its Workload, which it learns of at its discovery resync, up to 30 s after
// Kueue's CRDs are installed: too slow a wait for this suite.)
func TestKueueQueuesKubeflowJobsBesideTFK8sJobs(t *testing.T) {
	printKueueLogOnFailure(t)
	ns := testutil.Namespace(t, k8sClient)
	setupQueue(t, ns, 3)
	ctx := context.Background()
	start := time.Now()
	first := queuedKubeflowJob(ns, "kf-first")
	if err := k8sClient.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(first.Spec.RunPolicy.Suspend, false) {
		t.Errorf("kf-first as created: runPolicy.suspend = %v, want true, set by Kueue's webhook", ptr.Deref(first.Spec.RunPolicy.Suspend, false))
	}
	for _, pod := range runJob(t, ns, "kf-first") {
		if got := pod.Spec.NodeSelector["tfk8s.io/test-flavor"]; got != ns {
			t.Errorf("pod %s node selector tfk8s.io/test-flavor = %q, want the flavor's %q, injected by Kueue", pod.Name, got, ns)
		}
	}
	t.Logf("kf-first running %s after it was created", since(start))
	if wl, err := getWorkload(ctx, ns, "kf-first"); err == nil {
		t.Errorf("tfk8s made Workload %s for a kubeflow.org job, whose Workload is Kueue's", wl.GetName())
	}

	if err := k8sClient.Create(ctx, queuedJob(ns, "tf-second", "")); err != nil {
		t.Fatal(err)
	}
	waitJob(t, ns, "tf-second", "to be queued for want of quota", func(job *tfv1.TFJob) bool {
		return held(tfv1.ReasonQueued)(job) && strings.Contains(suspendedMessage(job), "insufficient")
	})
	// kf-third's lower priority puts it behind tf-second: Kueue orders the two by
	// creation time, to the second only, when their priorities are equal.
	createKueueObjects(t, `{apiVersion: kueue.x-k8s.io/v1beta2, kind: WorkloadPriorityClass, metadata: {name: `+ns+`-low}, value: -1}`)
	third := queuedKubeflowJob(ns, "kf-third")
	third.Labels[tfv1.LabelKueuePriorityClass] = ns + "-low"
	if err := k8sClient.Create(ctx, third); err != nil {
		t.Fatal(err)
	}
	wl := waitKueuePending(t, ns, "kf-third")
	t.Logf("kf-third pending: %s", conditionMessage(wl, "QuotaReserved"))
	assertKubeflowJobWaits(t, ns, "kf-third")

	freed := time.Now()
	finishJob(t, ns, "kf-first")
	runJob(t, ns, "tf-second")
	t.Logf("tf-second running %s after kf-first finished", since(freed))
	assertKubeflowJobWaits(t, ns, "kf-third")

	freed = time.Now()
	finishJob(t, ns, "tf-second")
	runJob(t, ns, "kf-third")
	t.Logf("kf-third running %s after tf-second finished", since(freed))
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kf-third"}, third); err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(third.Spec.RunPolicy.Suspend, true) {
		t.Errorf("running kf-third: runPolicy.suspend = %v, want false", ptr.Deref(third.Spec.RunPolicy.Suspend, true))
	}
	finishJob(t, ns, "kf-third")
	testutil.Eventually(t, "Kueue's Workload of kf-third to be finished", func(ctx context.Context) (bool, error) {
		wl, err := kueueWorkload(ctx, ns, "kf-third")
		return wl != nil && kueueproc.ConditionTrue(wl, "Finished"), err
	})
}

// queuedKubeflowJob is a kubeflow.org job as its users write one for Kueue: one PS and
// two workers of one CPU each, in LocalQueue q, not suspended.
func queuedKubeflowJob(ns, name string) *kubeflowv1.TFJob {
	replica := func(n int32) *kubeflowv1.ReplicaSpec {
		return &kubeflowv1.ReplicaSpec{Replicas: ptr.To(n), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "tensorflow", Image: "tensorflow/tensorflow:2.21.0", Command: []string{"python", "train.py"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			}},
		}}}
	}
	return &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{tfv1.LabelKueueQueue: "q"}},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"PS": replica(1), "Worker": replica(2),
		}},
	}
}

// kueueWorkload is the Workload Kueue made for the kubeflow.org job, nil before.
func kueueWorkload(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	job := &kubeflowv1.TFJob{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(controller.WorkloadGVK.GroupVersion().WithKind("WorkloadList"))
	if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].GetOwnerReferences() {
			if ref.UID == job.UID && ref.Kind == "TFJob" && ref.APIVersion == kubeflowv1.GroupVersion.String() {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

// waitKueuePending waits until Kueue has tried the kubeflow.org job's Workload and
// found no quota for it, and returns the Workload.
func waitKueuePending(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	var wl *unstructured.Unstructured
	testutil.Eventually(t, "Kueue to find no quota for "+name, func(ctx context.Context) (bool, error) {
		var err error
		wl, err = kueueWorkload(ctx, ns, name)
		return wl != nil && strings.Contains(conditionMessage(wl, "QuotaReserved"), "insufficient"), err
	})
	return wl
}

// assertKubeflowJobWaits checks that the kubeflow.org job is held as Kueue holds it:
// suspended, its Workload not admitted, no pod.
func assertKubeflowJobWaits(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	job := &kubeflowv1.TFJob{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(job.Spec.RunPolicy.Suspend, false) {
		t.Errorf("waiting %s: runPolicy.suspend = %v, want true", name, ptr.Deref(job.Spec.RunPolicy.Suspend, false))
	}
	if wl, err := kueueWorkload(ctx, ns, name); err != nil || wl == nil || kueueproc.ConditionTrue(wl, "Admitted") || kueueproc.ConditionTrue(wl, "QuotaReserved") {
		t.Errorf("waiting %s: its Workload is missing or admitted (err %v)", name, err)
	}
	if pods, err := jobPods(ctx, ns, name); err != nil || len(pods) != 0 {
		t.Errorf("waiting %s has %d pods (err %v), want none", name, len(pods), err)
	}
}

// conditionMessage is the message of an unstructured object's condition typ.
func conditionMessage(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}
