package dashboard

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestKubeflowJobBesideOwn: the jobs list shows a kubeflow.org TFJob beside a tfk8s.io
// one, marked with its group; its page names its kind, offers no artifacts and says
// how to move it over; asking for its artifacts is refused with that advice; and its
// Delete button deletes the kubeflow.org object.
func TestKubeflowJobBesideOwn(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
	kf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
		"metadata": map[string]any{"name": "kf", "namespace": ns},
		"spec": map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(2), "template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "tensorflow", "image": "tf:2.21", "command": []any{"python3", "x.py"}}}},
		}}}},
	}}
	if err := k8sClient.Create(context.Background(), kf); err != nil {
		t.Fatal(err)
	}
	createJob(t, testutil.MakeTFJob("own", ns).Workers(1).Obj())
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs?namespace="+ns, `tr.job[data-name="kf"]`); err != nil {
		t.Fatal(err)
	}
	if kind, err := browser.Text(ctx, `tr.job[data-name="kf"] .kind`); err != nil || kind != "kubeflow.org" {
		t.Errorf("the kubeflow.org job's row is marked %q, want kubeflow.org: %v", kind, err)
	}
	if n, err := browser.Count(ctx, `tr.job[data-name="own"] .kind`); err != nil || n != 0 {
		t.Errorf("the tfk8s.io job's row has %d kind marks, want none: %v", n, err)
	}

	page := base + "/jobs/" + ns + "/kf"
	if err := browser.Open(ctx, page, "#job-kind"); err != nil {
		t.Fatal(err)
	}
	if hint, err := browser.Text(ctx, "#kubeflow-hint"); err != nil || !strings.Contains(hint, "tfk8s render --to tfk8s kubeflow.org/kf") {
		t.Errorf("the job page's hint is %q, want the command that moves the job over: %v", hint, err)
	}
	if n, err := browser.Count(ctx, "#artifacts-link"); err != nil || n != 0 {
		t.Errorf("the kubeflow.org job's page links its artifacts (%d links): %v", n, err)
	}
	if err := browser.Open(ctx, page+"/artifacts", "main"); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.Text(ctx, "main"); err != nil || !strings.Contains(text, "tfjob.kubeflow.org/kf") || !strings.Contains(text, http.StatusText(http.StatusBadRequest)) {
		t.Errorf("the artifacts of a kubeflow.org job: page says %q, want a Bad Request naming tfjob.kubeflow.org/kf: %v", text, err)
	}

	if err := browser.Open(ctx, page+"/confirm/delete", "#confirm"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm"))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the kubeflow.org job to be deleted", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kf"}, kf)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
