package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The dashboard's cluster has its own network, apart from the other suites'.
const (
	dashboardBridge  = "tfk8se2e4"
	dashboardPodCIDR = "10.242.0.0/24"
	// dashboardWait bounds every wait for the browser to show something.
	dashboardWait = 60 * time.Second
)

// tickScript prints a numbered line every half second until the test's release URL
// (argument 1) answers, at most 5 minutes, then exits 0: a replica whose log grows
// while the test watches it, and ends when the test says so.
const tickScript = `import sys, time, urllib.request
for i in range(600):
    print(f"tick {i}", flush=True)
    try:
        urllib.request.urlopen(sys.argv[1], timeout=0.5)
        sys.exit(0)
    except Exception:
        time.sleep(0.5)
sys.exit(1)`

// TestDashboard runs `tfk8s dashboard` against a local cluster whose node runs real
// pods, and drives it from Chromium: the jobs list leads to a running job's page, whose
// logs page shows new lines of the running pod as they are printed, without a reload;
// a job submitted through the form runs to Succeeded on the node. Then the security
// checks of issue 24: crafted confirm links, a spoofed Host from another network
// namespace, and one 300 MiB log line with the dashboard's peak memory measured.
func TestDashboard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir: binDir, NodeName: "e2e-dashboard-node", PodCIDR: dashboardPodCIDR, Bridge: dashboardBridge,
	}, nil)
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	c.wait = dashboardWait
	base := startCLI(ctx, t, c, dashboardLine, "dashboard", "--address", "127.0.0.1:0")
	bctx := browser.Start(t)

	t.Run("live logs of a running pod", func(t *testing.T) { testDashboardLiveLogs(ctx, bctx, t, c, base) })
	t.Run("the form's job runs on the node", func(t *testing.T) { testDashboardSubmitRuns(ctx, bctx, t, c, base) })
	if msgs := browser.Console(bctx); len(msgs) > 0 {
		t.Errorf("the pages wrote to the console (a CSP violation or a script error): %q", msgs)
	}
	t.Run("crafted confirm links", func(t *testing.T) { testDashboardCraftedLinks(ctx, t, c, base) })
	t.Run("spoofed Host from another network namespace", func(t *testing.T) { testDashboardSpoofedHost(ctx, t, c, binDir) })
	t.Run("a 300 MiB log line", func(t *testing.T) { testDashboardLongLogLine(ctx, t, c, binDir) })
}

// testDashboardLiveLogs: list → job page → logs; the log shows tick N, then a later
// tick appears in the same page; once released, the job succeeds and the stream ends.
func testDashboardLiveLogs(ctx, bctx context.Context, t *testing.T, c *jobsCluster, base string) {
	releaseURL, release := startRelease(t)
	c.mustTfk8s(ctx, t, "submit", "--name", "ticker", "--image", jobsImage, "--workers", "0", "--chief",
		"--", "python3", "-c", tickScript, releaseURL)
	defer c.tfk8s(ctx, "delete", "ticker")
	defer release()
	if err := c.waitAllRunning(ctx, "ticker", 1, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}

	row := `tr.job[data-name="ticker"]`
	if err := browser.Open(bctx, base+"/jobs?namespace=default", row); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(bctx, row, "Running", dashboardWait); err != nil {
		t.Fatalf("the jobs list does not show ticker Running: %v (row %q)", err, text)
	}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.CSS(row + " a")), chromedp.WaitVisible(chromedp.ID("logs-link")),
		chromedp.Click(chromedp.ID("logs-link")), chromedp.WaitVisible(chromedp.ID("log")),
	}
	if err := chromedp.Do(bctx, steps...); err != nil {
		t.Fatalf("from the list to the job's logs: %v", err)
	}
	// A mark on the page's window, gone if the page reloads.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool]("window.tfk8sNoReload = true")); err != nil {
		t.Fatal(err)
	}
	first := waitTick(t, bctx, -1)
	later := waitTick(t, bctx, first)
	t.Logf("the logs page showed tick %d, then tick %d without a reload", first, later)
	if kept, err := chromedp.Run(bctx, chromedp.Evaluate[bool]("window.tfk8sNoReload === true")); err != nil || !kept {
		t.Errorf("the logs page reloaded to show new lines (%v)", err)
	}
	if text, _ := browser.Text(bctx, "#log"); !strings.Contains(text, "[chief-0] tick 0\n[chief-0] tick 1") {
		t.Errorf("the log lacks the chief's first lines with their prefix:\n%.400s", text)
	}

	release()
	if job := c.waitFinished(ctx, t, "ticker"); job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("ticker state %s after release, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	if status, err := browser.WaitText(bctx, "#log-status", "End of the log", dashboardWait); err != nil {
		t.Errorf("the log stream did not end with the job: %v (status %q)", err, status)
	}
}

// tickLine is a tick line of tickScript, as the logs page shows it.
var tickLine = regexp.MustCompile(`\[chief-0\] tick (\d+)`)

// waitTick waits until the logs page shows a tick later than after and returns the
// latest tick it shows.
func waitTick(t *testing.T, bctx context.Context, after int) int {
	t.Helper()
	latest := -1
	deadline := time.Now().Add(dashboardWait)
	for time.Now().Before(deadline) {
		text, err := browser.Text(bctx, "#log")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tickLine.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[1])
			latest = max(latest, n)
		}
		if latest > after {
			return latest
		}
		time.Sleep(200 * time.Millisecond)
	}
	status, _ := browser.Text(bctx, "#log-status")
	t.Fatalf("the logs page shows no tick after %d within %v (latest %d, status %q)", after, dashboardWait, latest, status)
	return 0
}

// testDashboardSubmitRuns: the submit form creates a job that the node runs to
// Succeeded, which the job page shows.
func testDashboardSubmitRuns(ctx, bctx context.Context, t *testing.T, c *jobsCluster, base string) {
	if err := browser.Open(bctx, base+"/submit?namespace=default", "#name"); err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{"name": "formed", "image": jobsImage, "command": "python3 -c print('formed-ran')", "ps": "0", "workers": "1"}
	var fill []chromedp.Action[chromedp.Void]
	for id, v := range fields {
		fill = append(fill, chromedp.SetValue(chromedp.ID(id), v))
	}
	fill = append(fill, chromedp.Click(chromedp.ID("create")))
	if err := chromedp.Do(bctx, fill...); err != nil {
		t.Fatalf("filling and sending the submit form: %v", err)
	}
	if _, err := browser.WaitText(bctx, "#job-name", "formed", dashboardWait); err != nil {
		errs, _ := browser.Text(bctx, "#errors")
		t.Fatalf("Create did not lead to the job's page: %v (errors %q)", err, errs)
	}
	defer c.tfk8s(ctx, "delete", "formed")
	if state, err := browser.WaitText(bctx, "#job-state", string(tfv1.JobSucceeded), dashboardWait); err != nil {
		c.fail(t, "the job page did not show formed Succeeded: %v (state %q)", err, state)
	}
	pod := c.pod(ctx, t, "formed", "worker", 0)
	if pod.Spec.NodeName != "e2e-dashboard-node" {
		t.Errorf("formed's worker ran on node %q, want e2e-dashboard-node", pod.Spec.NodeName)
	}
	if logs := c.tfk8s(ctx, "logs", "formed"); !strings.Contains(logs.stdout, "[worker-0] formed-ran") {
		t.Errorf("formed's worker did not run the form's command: %s", logs)
	}
}

// dashboardLine matches the line tfk8s dashboard prints once it listens.
var dashboardLine = regexp.MustCompile(`Dashboard: (http://127\.0\.0\.1:\d+)/`)

// startCLI runs the CLI with args in namespace default until the test ends, as a
// user leaves a serving command (dashboard, tensorboard) running, and returns the
// first group of urlLine once its output matches it, within c.wait.
func startCLI(ctx context.Context, t *testing.T, c *jobsCluster, urlLine *regexp.Regexp, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var stdout, stderr testutil.SyncBuffer
	env := cli.Env{
		IOStreams:  genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv:     func(string) string { return "" },
		ConfigFile: c.config,
	}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"--kubeconfig", c.kubeconfig, "-n", "default"}, args...), env)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("tfk8s %s exited %d:\n%s", strings.Join(args, " "), code, stderr.String())
		}
	})
	var url string
	c.eventually(ctx, t, "the URL of tfk8s "+strings.Join(args, " "), func() (bool, error) {
		select {
		case code := <-done:
			done <- code
			t.Fatalf("tfk8s %s exited %d before printing its URL:\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		default:
		}
		if m := urlLine.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
		return url != "", fmt.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	})
	t.Logf("tfk8s %s: %s (waited: %s)", strings.Join(args, " "), url, strings.TrimSpace(stderr.String()))
	return url
}
