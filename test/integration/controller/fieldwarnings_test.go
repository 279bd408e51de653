package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestIgnoredGangFieldsAreNamed: on a controller with no gang scheduler, a job that
// names no provider but sets minAvailable, queue and minResources (the shape of a
// Kubeflow manifest written for Volcano) runs its pods one by one, and says so: the
// condition FieldsIgnored and a Warning event name each field by its path. Once the
// user removes the fields, the condition goes.
func TestIgnoredGangFieldsAreNamed(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := makeGangJob("kubeflow", ns, &tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](3), Queue: "research",
		MinResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}})
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	job = waitCondition(t, ns, job.Name, tfv1.JobFieldsIgnored)
	c := findCondition(job, tfv1.JobFieldsIgnored)
	t.Logf("%s: %s", c.Reason, c.Message)
	for _, path := range []string{"minAvailable", "queue", "minResources"} {
		if want := "spec.runPolicy.schedulingPolicy." + path; !strings.Contains(c.Message, want) {
			t.Errorf("condition message does not say %q", want)
		}
	}
	if c.Reason != tfv1.ReasonFieldsIgnored || !strings.Contains(c.Message, "--gang-scheduler is none") {
		t.Errorf("condition %s: %s; want %s naming the controller's --gang-scheduler", c.Reason, c.Message, tfv1.ReasonFieldsIgnored)
	}
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonFieldsIgnored); msg != c.Message {
		t.Errorf("event %q, want the condition's message", msg)
	}
	if job.Status.State == tfv1.JobState(tfv1.ReasonFieldsIgnored) {
		t.Errorf("state %s: the warning must not become the job's state", job.Status.State)
	}
	waitPods(t, ns, job.Name, gangPodNames(job.Name)...)

	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.RunPolicy.SchedulingPolicy = nil
	if err := k8sClient.Patch(ctx, job, patch); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the FieldsIgnored condition to go", func(ctx context.Context) (bool, error) {
		j, err := getJob(ctx, ns, job.Name)
		return err == nil && findCondition(j, tfv1.JobFieldsIgnored).Type == "", err
	})
}
