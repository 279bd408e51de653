package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// requestedAt is the job's tfv1.AnnotationTensorBoardRequested, zero if none.
func requestedAt(t *testing.T, ns, name string) time.Time {
	t.Helper()
	v, ok := getJob(t, ns, name).Annotations[tfv1.AnnotationTensorBoardRequested]
	if !ok {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatalf("annotation %s=%q: %v", tfv1.AnnotationTensorBoardRequested, v, err)
	}
	return at
}

// TestReopenTensorBoardSetsTheAnnotation: the job page's and the workspace's button
// do what tfk8s tensorboard JOB does to the job: set
// tfk8s.io/tensorboard-requested-at to now, which restarts the TensorBoard's time to
// live; both are audited, and a job without a TensorBoard is refused with the field
// that says so.
func TestReopenTensorBoardSetsTheAnnotation(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := testutil.MakeTFJob("tb", ns).Workers(1).Obj()
	// The job backs up no paths, only its logs: its TensorBoard says what it reads.
	job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true, LogDir: "s3://" + s3server.Bucket + "/runs/"}
	finishedJobWithStoredLogs(t, job, "epoch 1\n")
	createJob(t, testutil.MakeTFJob("plain", ns).Workers(1).Obj())
	base, audit := startDashboard(t, ns)
	ctx := browser.Start(t)
	before := time.Now().Truncate(time.Second)

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/tb", "#tensorboard-reopen"); err != nil {
		t.Fatal(err)
	}
	if cmd, _ := firstAttribute(ctx, "#tensorboard button.copy", "data-copy"); cmd != "tfk8s tensorboard tb -n "+ns {
		t.Errorf("the job page's copy button copies %q", cmd)
	}
	if err := browser.Submit(ctx, "#tensorboard-reopen"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the job page's button sets "+tfv1.AnnotationTensorBoardRequested, func(context.Context) (bool, error) {
		return !requestedAt(t, ns, "tb").IsZero(), nil
	})
	if at := requestedAt(t, ns, "tb"); at.Before(before) || at.After(time.Now()) {
		t.Errorf("after the job page's button, %s is %v, want between %v and now", tfv1.AnnotationTensorBoardRequested, at, before)
	}

	// The workspace's button sets it again, once it was taken away.
	patch := []byte(`{"metadata":{"annotations":{"` + tfv1.AnnotationTensorBoardRequested + `":null}}}`)
	if err := k8sClient.Patch(context.Background(), getJob(t, ns, "tb"), client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if err := browser.Open(ctx, base+"/workspace?namespace="+ns, `tr.tensorboard[data-job="tb"] button.reopen`); err != nil {
		t.Fatal(err)
	}
	if err := browser.Submit(ctx, `tr.tensorboard[data-job="tb"] button.reopen`); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the workspace's button sets "+tfv1.AnnotationTensorBoardRequested, func(context.Context) (bool, error) {
		return !requestedAt(t, ns, "tb").IsZero(), nil
	})

	// The same form, pointed at a job without a TensorBoard.
	if err := browser.Open(ctx, base+"/workspace?namespace="+ns, `tr.tensorboard[data-job="tb"] button.reopen`); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.SetAttributeValue(`tr.tensorboard[data-job="tb"] form`, "action", "/jobs/"+ns+"/plain/tensorboard"),
		chromedp.Click(`tr.tensorboard[data-job="tb"] button.reopen`),
		chromedp.WaitVisible(chromedp.ID("error")))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := browser.Text(ctx, "main"); !strings.Contains(text, "400") || !strings.Contains(text, "spec.tensorboard.enabled is false") {
		t.Errorf("re-opening the TensorBoard of a job without one: %q, want 400 naming spec.tensorboard.enabled", text)
	}
	if _, ok := getJob(t, ns, "plain").Annotations[tfv1.AnnotationTensorBoardRequested]; ok {
		t.Errorf("a job without a TensorBoard was annotated")
	}
	if n := strings.Count(audit.String(), fmt.Sprintf(`action=tensorboard tfjob=%s/tb remote=`, ns)); n != 2 {
		t.Errorf("the audit log has %d lines of tfjob tb's TensorBoard, want 2:\n%s", n, audit.String())
	}
}
