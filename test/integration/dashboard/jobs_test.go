package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// wait bounds every wait for a page to show something.
const wait = 20 * time.Second

// TestListToJobPage follows a user from the jobs list to a job's page: the list shows
// the job's state and ready replicas and updates itself, the job page its replicas
// with their nodes, restarts and exit codes, and its state as it changes.
func TestListToJobPage(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	mnist := testutil.MakeTFJob("mnist", ns).PS(1).Workers(2).Obj()
	setGPUs(mnist, tfv1.ReplicaTypeWorker, "1")
	createJob(t, mnist)
	createJob(t, testutil.MakeTFJob("other", ns).Chief().Obj())
	waitPods(t, ns, "mnist", "mnist-ps-0", "mnist-worker-0", "mnist-worker-1")
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/", `tr.job[data-name="other"]`); err != nil {
		t.Fatal(err)
	}
	// The list refreshes itself: pods placed and ready show up without a reload.
	for i, pod := range []string{"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"} {
		testutil.Kubelet{Client: k8sClient}.Bind(t, ns, pod, []string{"node-a", "node-b", "node-c"}[i])
		setReady(t, ns, pod, int32(i/2), 137)
	}
	row := `tr.job[data-name="mnist"]`
	if text, err := browser.WaitText(ctx, row, "Running", wait); err != nil || !strings.Contains(text, "3/3") {
		t.Errorf("the jobs list does not show mnist Running with 3/3 ready: %v (row %q)", err, text)
	}
	if gpus, err := browser.Text(ctx, row+" td.gpus"); err != nil || gpus != "2/2" {
		t.Errorf("the jobs list shows mnist's GPUs as %q, want 2/2 (a GPU per worker, both bound): %v", gpus, err)
	}
	if err := browser.Screenshot(ctx, base+"/jobs?namespace="+ns, row, screenshotPath(t, "dashboard-jobs.png")); err != nil {
		t.Error(err)
	}

	// Search filters the rows.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("q"), "oth")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the search to leave only other", func(context.Context) (bool, error) {
		n, err := browser.Count(ctx, `tr.job`)
		if err != nil {
			return false, err
		}
		text, err := browser.Text(ctx, "#jobs")
		return n == 1 && strings.Contains(text, "other"), err
	})

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/jobs?namespace="+ns), chromedp.Click(chromedp.CSS(row+" a"))); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitText(ctx, "#job-name", "mnist", wait); err != nil {
		t.Fatal(err)
	}
	replicas, err := browser.Text(ctx, "table.replicas")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ps-0\tmnist-ps-0\tRunning\tnode-a\t0\t0", "worker-0\tmnist-worker-0\tRunning\tnode-b\t1\t0", "worker-1\tmnist-worker-1\tRunning\tnode-c\t1\t1\t137 OOMKilled"} {
		if !strings.Contains(replicas, want) {
			t.Errorf("the job page's replicas lack %q:\n%s", want, replicas)
		}
	}
	if tfconfig, _ := browser.Text(ctx, "#tfconfig"); !strings.Contains(tfconfig, `"worker"`) || !strings.Contains(tfconfig, "mnist-worker-1") {
		t.Errorf("the job page's TF_CONFIG lacks the cluster: %q", tfconfig)
	}
	if err := browser.Screenshot(ctx, base+"/jobs/"+ns+"/mnist", "table.replicas", screenshotPath(t, "dashboard-job.png")); err != nil {
		t.Error(err)
	}

	// The page follows the job: once every worker exited 0, it shows Succeeded.
	for _, pod := range []string{"mnist-worker-1", "mnist-worker-0"} {
		kubelet().SetExited(t, ns, pod, 0)
	}
	if text, err := browser.WaitText(ctx, "#job-state", string(tfv1.JobSucceeded), wait); err != nil {
		t.Errorf("the job page did not follow the job to Succeeded: %v (state %q)", err, text)
	}
	if d := browser.Dialogs(ctx); len(d) > 0 {
		t.Errorf("dialogs opened: %q", d)
	}
	if c := browser.Console(ctx); len(c) > 0 {
		t.Errorf("the pages wrote to the console (a CSP violation or a script error): %q", c)
	}
}
