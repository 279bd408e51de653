package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// payload is what an attacker who can write a job's annotations, events or logs puts
// there, hoping the dashboard renders it as HTML.
const payload = `<script>alert("xss")</script><img src=x onerror="alert('img')">`

// TestUntrustedTextRendersInert: an annotation (shown in the YAML), an event message
// and a log line holding markup are shown as text: no element is created, no dialog
// opens. The log's ANSI colours become classes on spans. The logs come from S3, where
// the agent backed them up (there is no kubelet to serve live logs here).
func TestUntrustedTextRendersInert(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	job := testutil.MakeTFJob("xss", ns).Workers(1).Obj()
	job.Annotations = map[string]string{"note": payload}
	finishedJobWithStoredLogs(t, job, "epoch 1 loss 0.5\n\x1b[1;31mred and bold\x1b[0m then plain\n"+payload+" from the log\n")
	createEvent(t, getJob(t, ns, "xss"), payload)
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/xss", "#events"); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "#events", payload, wait); err != nil {
		t.Errorf("the event's message is not shown as text: %v (events %q)", err, text)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("details summary"))); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.Text(ctx, "#yaml"); err != nil || !strings.Contains(text, "note: "+payload) {
		t.Errorf("the annotation is not shown as text in the YAML: %v %q", err, text)
	}
	assertInert(t, ctx, "main")

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/xss/logs", "#log"); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "#log-status", "End of the log", wait); err != nil {
		t.Fatalf("the log stream did not end: %v (status %q)", err, text)
	}
	want := "[worker-0] epoch 1 loss 0.5\n[worker-0] red and bold then plain\n[worker-0] " + payload + " from the log"
	if text, err := browser.Text(ctx, "#log"); err != nil || text != want {
		t.Errorf("the log shows %q (%v), want %q", text, err, want)
	}
	html, err := browser.HTML(ctx, "#log")
	if err != nil || !strings.Contains(html, `<span class="ansi-bold ansi-fg-31">red and bold</span><span> then plain</span>`) {
		t.Errorf("the ANSI colours are not spans with classes: %v\n%s", err, html)
	}
	assertInert(t, ctx, "#log")
}

// assertInert fails the test if the markup of payload became elements under selector
// or opened a dialog.
func assertInert(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	for _, tag := range []string{"script", "img"} {
		if n, err := browser.Count(ctx, selector+" "+tag); err != nil || n != 0 {
			t.Errorf("%d <%s> elements under %s (%v): untrusted text became markup", n, tag, selector, err)
		}
	}
	if d := browser.Dialogs(ctx); len(d) > 0 {
		t.Errorf("dialogs opened: %q", d)
	}
}

// finishedJobWithStoredLogs creates job (one worker) with its artifacts and logs in a
// fresh S3 server, stores its worker's attempts with the given logs as its agent
// would, and lets the worker exit 0, so that the job succeeds and its logs are read
// from S3.
func finishedJobWithStoredLogs(t *testing.T, job *tfv1.TFJob, logs ...string) *s3server.Server {
	t.Helper()
	srv := s3server.Start(t)
	createStorageSecret(t, job.Namespace, srv)
	dest := storage.URI{Bucket: srv.Bucket, Key: "runs/"}
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}}
	createJob(t, job)
	worker := job.Name + "-worker-0"
	waitPods(t, job.Namespace, job.Name, worker)
	prefix := storage.ReplicaPrefix(dest, job.Namespace, job.Name, "worker-0")
	for i, log := range logs {
		err := srv.Client(t).PutObject(context.Background(), storage.AttemptLogURI(prefix, i+1, "tensorflow"), strings.NewReader(log), int64(len(log)), storage.UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	kubelet().SetExited(t, job.Namespace, worker, 0)
	return srv
}

// createStorageSecret creates the job's storage Secret, pointing at srv.
func createStorageSecret(t *testing.T, ns string, srv *s3server.Server) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3-credentials"}, StringData: map[string]string{
		tfjob.SecretKeyEndpoint: srv.Endpoint, tfjob.SecretKeyAccessKeyID: srv.AccessKey, tfjob.SecretKeySecretAccessKey: srv.SecretKey,
		tfjob.SecretKeyRegion: storage.DefaultRegion, tfjob.SecretKeyInsecure: "true",
	}}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatalf("creating the storage secret: %v", err)
	}
}

// createEvent records an event about job with the given message.
func createEvent(t *testing.T, job *tfv1.TFJob, note string) {
	t.Helper()
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "-"},
		EventTime:  metav1.NewMicroTime(time.Now()),
		Regarding: corev1.ObjectReference{Kind: "TFJob", APIVersion: tfv1.GroupVersion.String(),
			Namespace: job.Namespace, Name: job.Name, UID: job.UID},
		Reason: "Injected", Action: "Test", Note: note, Type: corev1.EventTypeWarning,
		ReportingController: "test", ReportingInstance: "test-1",
	}
	if err := k8sClient.Create(context.Background(), e); err != nil {
		t.Fatalf("creating an event: %v", err)
	}
}

// TestCrossOriginPostIsRefused: a page of another origin that posts a form to the
// local dashboard (which acts with the user's kubeconfig) is refused, and the job
// stays as it was; the same action through the dashboard's own confirmation page
// works, and is written to the audit log.
func TestCrossOriginPostIsRefused(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	createJob(t, testutil.MakeTFJob("target", ns).Workers(1).Obj())
	base, audit := startDashboard(t, ns)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/jobs/%s/target/suspend"></form>
<script>document.getElementById("f").submit()</script>`, base, ns)
	}))
	defer evil.Close()
	ctx := browser.Start(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "body", "cross-origin request detected", wait); err != nil {
		t.Fatalf("the cross-origin POST was not refused: %v (page %q)", err, text)
	}
	if s := getJob(t, ns, "target").Spec.RunPolicy.Suspend; s != nil && *s {
		t.Errorf("the cross-origin POST suspended the job")
	}
	// Without Sec-Fetch-Site (an older browser), the Origin header is checked.
	req, _ := http.NewRequest(http.MethodPost, base+"/jobs/"+ns+"/target/delete", nil)
	req.Header.Set("Origin", evil.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST with Origin %s got %s, want 403 Forbidden", evil.URL, resp.Status)
	}
	// Both refusals are counted.
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `tfk8s_dashboard_requests_total{code="403",route="POST /jobs/{namespace}/{name}/{action}"} 2`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %s:\n%s", want, metrics)
	}

	if err := browser.Open(ctx, base+"/jobs/"+ns+"/target", "#suspend-link"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("suspend-link")), chromedp.WaitVisible(chromedp.ID("confirm")), chromedp.Click(chromedp.ID("confirm"))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the job to be suspended", func(context.Context) (bool, error) {
		return ptr.Deref(getJob(t, ns, "target").Spec.RunPolicy.Suspend, false), nil
	})
	if _, err := browser.WaitText(ctx, "#job-state", string(tfv1.JobSuspended), wait); err != nil {
		t.Error(err)
	}
	wantAudit := fmt.Sprintf(`audit: user="kubeconfig" action=suspend tfjob=%s/target`, ns)
	if !strings.Contains(audit.String(), wantAudit) || strings.Count(audit.String(), "audit:") != 1 {
		t.Errorf("the audit log has not exactly the one suspend, %q:\n%s", wantAudit, audit.String())
	}
}
