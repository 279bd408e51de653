package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestGangTimeoutAsTroubleshootingSays lets a job's pods wait for a node past its
// scheduleTimeoutSeconds, the scheduler's verdict written on one of them as the
// scheduler writes it, and checks that tfk8s wait fails with the line
// docs/troubleshooting.md shows.
func TestGangTimeoutAsTroubleshootingSays(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := makeGangJob("late", ns, &tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: ptr.To[int32](2)})
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, gangPodNames(job.Name)...)
	markUnschedulable(t, ns, "late-worker-0", "0/1 nodes are available: 1 Insufficient cpu.")
	var stdout, stderr strings.Builder
	env := cli.Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv: func(string) string { return "" }}
	if code := cli.Main(ctx, []string{"--kubeconfig", cp.Kubeconfig(), "-n", ns, "wait", job.Name, "--timeout", "50s"}, env); code == 0 {
		t.Errorf("tfk8s wait %s: exit code 0, want a failure:\n%s", job.Name, stdout.String())
	}
	testutil.CheckAsTroubleshootingSays(t, "gang-timeout", stderr.String())
}

// TestQuotaRefusedAsTroubleshootingSays runs a job of three pods in a namespace whose
// ResourceQuota allows one, and checks that tfk8s describe shows the refusal as
// docs/troubleshooting.md does.
func TestQuotaRefusedAsTroubleshootingSays(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-pod", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}},
	}
	if err := k8sClient.Create(ctx, quota); err != nil {
		t.Fatal(err)
	}
	waitQuotaHard(t, ns, "one-pod", "1")
	startController(t)
	job := testutil.MakeTFJob("capped", ns).PS(1).Workers(2).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPodCreationRefused(t, ns, job.Name, metav1.ConditionTrue, 30*time.Second)
	var stdout, stderr strings.Builder
	env := cli.Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv: func(string) string { return "" }}
	if code := cli.Main(ctx, []string{"--kubeconfig", cp.Kubeconfig(), "-n", ns, "describe", job.Name}, env); code != 0 {
		t.Fatalf("tfk8s describe %s: exit code %d:\n%s", job.Name, code, stderr.String())
	}
	testutil.CheckAsTroubleshootingSays(t, "quota-refused", stdout.String())
}
