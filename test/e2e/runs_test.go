package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The runs' cluster has its own network, apart from the other suites'.
const (
	runsBridge  = "tfk8se2er"
	runsPodCIDR = "10.234.0.0/24"
)

// scalarsProgram is a TensorFlow program small enough to keep the test short: it
// writes a training loss of 1/step for five steps with tf.summary, as a trainer does.
const scalarsProgram = `import tensorflow as tf

writer = tf.summary.create_file_writer("/workspace/logs/train")
with writer.as_default():
    for step in range(1, 6):
        tf.summary.scalar("loss", 1.0 / step, step=step)
writer.flush()
print("trained to step 5", flush=True)
`

// TestRuns: a job that stores in S3 is still listed and shown once its TTL deleted
// its TFJob (after its end was recorded), with its attempts, its logs and its scalars;
// submitted again from its run under the same name, it is a second run with attempts
// of its own; what its replica used is kept with it, and a replica killed by its
// memory limit is named with its peak and limit; one TensorBoard serves both runs, and the dashboard's compare view
// draws both (issue 27).
func TestRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(binDir, "tfk8s-nodeinit")) {
		t.Fatalf("no tfk8s-nodeinit in %s: training jobs need a node (make build)", binDir)
	}
	if !fileExists(filepath.Join(binDir, "..", "_out", "images", "tensorflow", "index.json")) {
		t.Fatalf("no TensorFlow image in %s/../_out/images: make tensorflow-image", binDir)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-runs-node",
		PodCIDR:  runsPodCIDR,
		Bridge:   runsBridge,
	}, func() {
		if left := leftNetwork(runsBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	c.wait = tfWait
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "train.py"), []byte(scalarsProgram), 0o644); err != nil {
		t.Fatal(err)
	}

	// The first run's TFJob goes as soon as it finished and its end is recorded.
	start := time.Now()
	c.mustTfk8s(ctx, t, "submit", code, "--name", "scalars", "--image", images.TensorFlow,
		"--workers", "1", "--artifacts", "logs", "--ttl-after-finished", "0s", "--", "python3", "train.py")
	firstRun := tfjob.RunID(string(c.job(ctx, t, "scalars").UID))
	c.eventually(ctx, t, "scalars deleted after it finished", func() (bool, error) {
		err := c.cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "scalars"}, &tfv1.TFJob{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	t.Logf("first run %s finished and deleted %.1f s after submit (the image pulled)", firstRun, time.Since(start).Seconds())

	// Deleted as a TFJob, the run is still listed and shown from S3.
	r := c.mustTfk8s(ctx, t, "runs")
	if !regexp.MustCompile(`(?m)^scalars\s+` + firstRun + `\s+Succeeded\s+.*\s+worker:1\s+0\.2$`).MatchString(r.stdout) {
		t.Errorf("runs does not list the deleted job's run %s as Succeeded with its loss 0.2:\n%s", firstRun, r.stdout)
	}
	r = c.mustTfk8s(ctx, t, "runs", "show", "scalars")
	for _, want := range []string{
		`(?m)^Run:\s+` + firstRun + `$`,
		`(?m)^State:\s+Succeeded$`,
		`(?m)^\s+worker-0\s+1\s+scalars-worker-0\s+.*\s0\s+Completed\b`,
		`(?m)^\s+worker-0\s+\S*/workspace/logs/train/events\.out\.tfevents\.`,
		`(?m)^\s+Step:\s+5 \(from worker-0's summaries\)\n\s+Loss:\s+0\.2 \(train/loss at step 5\)$`,
		`(?m)^\s+train/loss\s+5\s+0\.2$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("runs show scalars lacks %s:\n%s", want, r.stdout)
		}
	}
	if r = c.mustTfk8s(ctx, t, "logs", "scalars", "worker-0"); !strings.Contains(r.stdout, "trained to step 5") {
		t.Errorf("logs of the deleted job's run: %s", r)
	}
	checkRunUsage(ctx, t, c, "scalars/"+firstRun)

	// Submitted again from its run, under the same name: a second run.
	start = time.Now()
	c.mustTfk8s(ctx, t, "submit", "--from-run", "scalars/"+firstRun, "--yes", "--ttl-after-finished", "1h")
	second := waitRunSucceeded(ctx, t, c, "scalars")
	secondRun := tfjob.RunID(string(second.UID))
	t.Logf("second run %s Succeeded %.1f s after submit --from-run", secondRun, time.Since(start).Seconds())
	if secondRun == firstRun {
		t.Fatalf("the re-submission has the first run's id %s", firstRun)
	}
	r = c.mustTfk8s(ctx, t, "runs")
	for _, want := range []string{`(?m)^scalars\s+` + firstRun + `\s+Succeeded\s`, `(?m)^scalars\s+` + secondRun + `\s+Succeeded\s.*\s0\.2$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("runs lacks %s:\n%s", want, r.stdout)
		}
	}
	firstAttempts := runAttempts(ctx, t, c, "scalars/"+firstRun)
	secondAttempts := runAttempts(ctx, t, c, "scalars/"+secondRun)
	if len(firstAttempts) != 1 || len(secondAttempts) != 1 || firstAttempts[0].PodUID == secondAttempts[0].PodUID ||
		secondAttempts[0].PodUID != string(c.pod(ctx, t, "scalars", "worker", 0).UID) {
		t.Errorf("attempts of worker-0: first run %+v, second run %+v; want one each, the second of the pod that exists", firstAttempts, secondAttempts)
	}

	// Both runs in one TensorBoard, and side by side in the dashboard.
	checkRunsTensorBoard(ctx, t, c, firstRun, secondRun)
	checkRunsCompared(ctx, t, c, firstRun, secondRun)
	c.mustTfk8s(ctx, t, "delete", "scalars", "--wait")

	checkCodelessAttemptsKept(ctx, t, c)
	checkOOMKilledRun(ctx, t, c)
	checkLiveUsage(ctx, t, c)
}

// checkCodelessAttemptsKept: a job submitted without code, whose worker the ExitCode
// policy retries once, keeps both attempts' logs, each its own, and its run is listed
// as Failed (issue 27: such a job had no agent, and its first attempt was lost).
func checkCodelessAttemptsKept(ctx context.Context, t *testing.T, c *jobsCluster) {
	t.Helper()
	c.mustTfk8s(ctx, t, "submit", "--name", "rtry", "--image", images.Python, "--workers", "1",
		"--restart-policy", "ExitCode", "--backoff-limit", "1", "--", "sh", "-c", "echo attempt-$(date +%s%N); exit 137")
	job := c.waitFinished(ctx, t, "rtry")
	if job.Status.State != tfv1.JobFailed {
		c.fail(t, "rtry %s, want Failed after its retry: %+v", job.Status.State, job.Status.Conditions)
	}
	line := regexp.MustCompile(`(?m)^\[worker-0\] (attempt-\d+)$`)
	var printed []string
	for _, attempt := range []string{"1", "2"} {
		r := c.mustTfk8s(ctx, t, "logs", "rtry", "worker-0", "--attempt", attempt)
		m := line.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("logs rtry worker-0 --attempt %s shows no attempt line:\n%s", attempt, r)
		}
		printed = append(printed, m[1])
	}
	if printed[0] == printed[1] {
		t.Errorf("attempts 1 and 2 of worker-0 show the same line %s: one attempt's log stands for both", printed[0])
	}
	run := tfjob.RunID(string(job.UID))
	if r := c.mustTfk8s(ctx, t, "runs"); !regexp.MustCompile(`(?m)^rtry\s+` + run + `\s+Failed\s`).MatchString(r.stdout) {
		t.Errorf("runs does not list rtry's run %s as Failed:\n%s", run, r.stdout)
	}
	t.Logf("rtry without code: worker-0's attempts printed %s and %s", printed[0], printed[1])
	c.mustTfk8s(ctx, t, "delete", "rtry", "--wait")
}

// lossPoints are the [step, loss] points scalarsProgram writes: 1/step, steps 1 to 5,
// as float32 as tf.summary stores them.
func lossPoints() [][2]float64 {
	var points [][2]float64
	for step := 1; step <= 5; step++ {
		points = append(points, [2]float64{float64(step), float64(float32(1.0 / float64(step)))})
	}
	return points
}

// checkRunsTensorBoard: tfk8s tensorboard JOB/RUN JOB/RUN serves one TensorBoard whose
// runs are each run's summaries under the run's name, <job>-<run>/..., with the
// five losses each stored, read through TensorBoard's HTTP API.
func checkRunsTensorBoard(ctx context.Context, t *testing.T, c *jobsCluster, ids ...string) {
	t.Helper()
	args := []string{"tensorboard"}
	for _, id := range ids {
		args = append(args, "scalars/"+id)
	}
	base := startCLI(ctx, t, c, regexp.MustCompile(`TensorBoard of runs [^:]* in default: (http://127\.0\.0\.1:\d+/)`), args...)
	// A run's loss is under the run's name, at the path its replica wrote it.
	lossRun := func(tags map[string]map[string]any, id string) string {
		for run, scalars := range tags {
			if _, ok := scalars["loss"]; ok && strings.HasPrefix(run, "scalars-"+id+"/") && strings.HasSuffix(run, "/train") {
				return run
			}
		}
		return ""
	}
	var tags map[string]map[string]any
	c.eventually(ctx, t, "both runs' losses in TensorBoard", func() (bool, error) {
		tags = nil
		if err := getJSON(base+"data/plugin/scalars/tags", &tags); err != nil {
			return false, err
		}
		for _, id := range ids {
			if lossRun(tags, id) == "" {
				return false, fmt.Errorf("no run of scalars/%s with a loss among %v", id, slices.Sorted(maps.Keys(tags)))
			}
		}
		return true, nil
	})
	for _, id := range ids {
		run := lossRun(tags, id)
		var got [][]float64 // [wall time, step, value]
		c.eventually(ctx, t, "the five losses of "+run, func() (bool, error) {
			err := getJSON(base+"data/plugin/scalars/scalars?run="+url.QueryEscape(run)+"&tag=loss", &got)
			return err == nil && len(got) == 5, err
		})
		var points [][2]float64
		for _, p := range got {
			points = append(points, [2]float64{p[1], p[2]})
		}
		if d := cmp.Diff(lossPoints(), points, cmpopts.EquateApprox(0, 1e-7)); d != "" {
			t.Errorf("TensorBoard's loss of run %s (-written +served):\n%s", run, d)
		}
	}
	t.Logf("one TensorBoard serves runs %v", slices.Sorted(maps.Keys(tags)))
}

// checkRunsCompared: the dashboard's Runs page lists both runs; ticked and compared,
// their losses are drawn as one line each, whose points read back from the chart are
// the ones written, and their final scalars stand side by side.
func checkRunsCompared(ctx context.Context, t *testing.T, c *jobsCluster, ids ...string) {
	t.Helper()
	base := startCLI(ctx, t, c, dashboardLine, "dashboard", "--address", "127.0.0.1:0")
	bctx := browser.Start(t)
	if err := browser.Open(bctx, base+"/runs?namespace=default", "table.runs"); err != nil {
		t.Fatal(err)
	}
	want := browser.Points{"train/loss": {}}
	header, step, loss := []string{"Scalar"}, []string{"step"}, []string{"train/loss"}
	for _, id := range ids {
		if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`input[value="scalars/`+id+`"]`))); err != nil {
			page, _ := browser.Text(bctx, "body")
			t.Fatalf("ticking run scalars/%s on the Runs page: %v\n%s", id, err, page)
		}
		want["train/loss"]["scalars/"+id] = lossPoints()
		header, step, loss = append(header, "scalars/"+id), append(step, "5"), append(loss, "0.2")
	}
	if err := browser.Submit(bctx, "#compare-button"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS("#curves figure.curve canvas"))); err != nil {
		t.Fatal(err)
	}
	got, err := browser.Plotted(bctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-7)); d != "" {
		t.Errorf("the compare view's points (-written +plotted):\n%s", d)
	}
	table, err := chromedp.Run(bctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#final-scalars tr")].map(r => [...r.cells].map(c => c.innerText.trim()))`))
	if d := cmp.Diff([][]string{header, step, loss}, table); err != nil || d != "" {
		t.Errorf("the compare view's final scalars (%v; -want +shown):\n%s", err, d)
	}
	if msgs := browser.Console(bctx); len(msgs) > 0 {
		t.Errorf("the pages wrote to the console (a CSP violation or a script error): %q", msgs)
	}
}

// waitRunSucceeded waits for the job to finish and wants it Succeeded.
func waitRunSucceeded(ctx context.Context, t *testing.T, c *jobsCluster, name string) *tfv1.TFJob {
	t.Helper()
	job := c.waitFinished(ctx, t, name)
	if job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "%s %s, want Succeeded: %+v\nlogs:\n%s", name, job.Status.State, job.Status.Conditions, c.tfk8s(ctx, "logs", name))
	}
	return job
}

// runAttempts reads worker-0's attempts as runs show -o json prints them.
func runAttempts(ctx context.Context, t *testing.T, c *jobsCluster, run string) []storage.Attempt {
	t.Helper()
	r := c.mustTfk8s(ctx, t, "runs", "show", run, "-o", "json")
	var doc struct {
		Replicas []struct {
			Name     string            `json:"name"`
			Attempts []storage.Attempt `json:"attempts"`
		} `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("runs show %s -o json: %v\n%s", run, err, r.stdout)
	}
	for _, rep := range doc.Replicas {
		if rep.Name == "worker-0" {
			return rep.Attempts
		}
	}
	t.Fatalf("runs show %s -o json has no worker-0:\n%s", run, r.stdout)
	return nil
}
