package dashboard

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// createNotebookObjects creates what tfk8s notebook start leaves of a notebook: a
// running one's Deployment (with no kubelet, its pod never comes) and a stopped
// one's home claim alone.
func createNotebookObjects(t *testing.T, ns, running, stopped string) {
	t.Helper()
	labels := map[string]string{tfv1.LabelNotebook: running}
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: running, Labels: labels}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "jupyter", Image: "jupyter"}}}},
		}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: stopped + "-home", Labels: map[string]string{tfv1.LabelNotebook: stopped}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}},
	}
	for _, obj := range objs {
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// TestWorkspaceShowsNotebooksAndTensorBoards: the workspace page lists the
// namespace's notebooks, running or stopped, and its jobs' TensorBoards, each with
// the command that opens it, or the button that starts it again.
func TestWorkspaceShowsNotebooksAndTensorBoards(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	createNotebookObjects(t, ns, "lab", "old")
	job := testutil.MakeTFJob("with-tb", ns).Workers(1).Obj()
	// The job backs up no paths, only its logs: its TensorBoard says what it reads.
	job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, LogDir: "s3://" + s3server.Bucket + "/runs/"}
	finishedJobWithStoredLogs(t, job, "epoch 1\n")
	// The TensorBoard's expiry comes once the controller saw the job succeed.
	testutil.Eventually(t, "the TensorBoard's expiry", func(context.Context) (bool, error) {
		tb := getJob(t, ns, "with-tb").Status.TensorBoard
		return tb != nil && tb.ExpiresAt != nil, nil
	})
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs?namespace="+ns, "#nav-workspace"); err != nil {
		t.Fatal(err)
	}
	if err := browser.Open(ctx, base+"/workspace?namespace="+ns, "#notebooks"); err != nil {
		t.Fatal(err)
	}
	tb, err := browser.Text(ctx, `tr.tensorboard[data-job="with-tb"]`)
	for _, want := range []string{"Succeeded", "Starting, deleted in", "http://with-tb-tensorboard." + ns, "tfk8s tensorboard with-tb -n " + ns} {
		if err != nil || !strings.Contains(tb, want) {
			t.Errorf("the TensorBoard's row lacks %q: %q (%v)", want, tb, err)
		}
	}
	for _, tc := range []struct{ name, want string }{
		{"lab", "Starting ("},
		{"lab", "tfk8s notebook open lab -n " + ns},
		{"lab", "http://lab." + ns + ".svc"},
		{"old", "Stopped"},
		{"old", "Start Stop"},
	} {
		if text, _ := browser.Text(ctx, `tr.notebook[data-name="`+tc.name+`"]`); !strings.Contains(text, tc.want) {
			t.Errorf("notebook %s's row lacks %q: %q", tc.name, tc.want, text)
		}
	}
	if err := browser.Screenshot(ctx, base+"/workspace?namespace="+ns, "#tensorboards", screenshotPath(t, "dashboard-workspace.png")); err != nil {
		t.Error(err)
	}
}
