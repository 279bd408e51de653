package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
)

// tensorBoardEpochs is how many epochs the TensorBoard test's job trains: one point of
// each epoch scalar per epoch.
const tensorBoardEpochs = 6

// holdChief is the chief's command after training: it waits until the test's release
// URL (argument 1) answers, at most 5 minutes, so that the job is still running when
// the test looks at TensorBoard, however fast or slow the machine.
const holdChief = `import sys, time, urllib.request
for _ in range(600):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=5)
        sys.exit(0)
    except Exception:
        time.sleep(0.5)
print("[chief] never released", flush=True)
sys.exit(1)`

// testTensorBoard: a TensorFlow job submitted with --tensorboard gets a TensorBoard
// that `tfk8s tensorboard` opens through the API server; TensorBoard's own HTTP API
// lists the job's runs and scalar tags while the job runs, and every epoch once its
// pods are gone; Chromium renders the scalars. The chief trains in two halves, held
// after each until the test says so: the STEP that tfk8s list shows moves on between
// them while the job runs.
func testTensorBoard(ctx context.Context, t *testing.T, c *jobsCluster) {
	halfURL, halfway := startRelease(t)
	releaseURL, release := startRelease(t)
	// Parameter servers and workers serve until the end; only the chief goes on to
	// wait, and the second half resumes from the first's last checkpoint.
	train := func(epochs int) string {
		return fmt.Sprintf("python3 ps_strategy.py --epochs %d --steps-per-epoch 20 --model-dir /workspace/checkpoints", epochs)
	}
	script := fmt.Sprintf("%s && python3 -c '%s' %s && %s && python3 -c '%s' %s",
		train(tensorBoardEpochs/2), holdChief, halfURL, train(tensorBoardEpochs), holdChief, releaseURL)
	c.mustTfk8s(ctx, t, "submit", "../../examples/tensorflow", "--name", "tb", "--image", images.TensorFlow,
		"--ps", "1", "--workers", "2", "--chief", "--artifacts", "checkpoints", "--artifacts-interval", "3s",
		"--tensorboard", "--clean-pod-policy", "All", "--", "sh", "-c", script)
	defer c.tfk8s(ctx, "delete", "tb")
	base := startCLI(ctx, t, c, regexp.MustCompile(`TensorBoard of job default/tb: (http://127\.0\.0\.1:\d+/)`), "tensorboard", "tb")

	// While the job runs, its first summaries show.
	var runs []string
	c.eventually(ctx, t, "the job's train run in TensorBoard", func() (bool, error) {
		runs = nil
		err := getJSON(base+"data/runs", &runs)
		return err == nil && trainRun(runs) != "", err
	})
	run := trainRun(runs)
	state := c.jobState(ctx, "tb")
	t.Logf("TensorBoard lists runs %q while the job is %s", runs, state)
	if state != tfv1.JobRunning {
		t.Errorf("the job was %s when TensorBoard first listed its run; want it Running (its chief waits for the test)", state)
	}
	// Progress moves while the job trains: a step at half-way, a later one after.
	half := waitStep(ctx, t, c, "tb", 0)
	halfway()
	last := waitStep(ctx, t, c, "tb", half)
	t.Logf("tfk8s list -o wide, the job Running: step %d at half-way, %d at the end", half, last)
	release()

	job, _ := waitSucceeded(ctx, t, c, "tb")
	c.eventually(ctx, t, "the job's pods gone", func() (bool, error) {
		pods, err := c.pods(ctx, "tb")
		return err == nil && len(pods) == 0, err
	})
	// With the pods gone, TensorBoard still serves every epoch, read from S3.
	var points [][]float64
	c.eventually(ctx, t, fmt.Sprintf("%d points of epoch_loss in run %s", tensorBoardEpochs, run), func() (bool, error) {
		err := getJSON(base+"data/plugin/scalars/scalars?run="+url.QueryEscape(run)+"&tag=epoch_loss", &points)
		return err == nil && len(points) == tensorBoardEpochs, err
	})
	var tags map[string]map[string]any
	if err := getJSON(base+"data/plugin/scalars/tags", &tags); err != nil {
		t.Fatal(err)
	}
	if _, ok := tags[run]["epoch_loss"]; !ok {
		t.Errorf("scalar tags %v lack epoch_loss in run %s", tags, run)
	}
	t.Logf("after the job (%s at %v), with its pods gone: run %s has epoch_loss at %d epochs", job.Status.State, job.Status.CompletionTime, run, len(points))
	describe := c.mustTfk8s(ctx, t, "describe", "tb").stdout
	if !regexp.MustCompile(`TensorBoard:\s+http://tb-tensorboard\.default\.svc:6006/, ready .*deleted in`).MatchString(describe) {
		t.Errorf("describe tb does not show the TensorBoard and when it goes:\n%s", describe)
	}
	screenshotScalars(t, base)
}

// waitStep waits until tfk8s list -o wide shows the job Running at a STEP past after,
// and returns that step.
func waitStep(ctx context.Context, t *testing.T, c *jobsCluster, name string, after int64) int64 {
	t.Helper()
	var step int64
	c.eventually(ctx, t, fmt.Sprintf("%s Running past step %d in tfk8s list -o wide", name, after), func() (bool, error) {
		r := c.tfk8s(ctx, "list", "-o", "wide")
		for _, line := range strings.Split(r.stdout, "\n") {
			// NAME STATE WORKERS PS GPUS AGE CHIEF EVALUATOR ACTIVE SUCCEEDED FAILED RESTARTS STEP LOSS IMAGE
			f := strings.Fields(line)
			if len(f) < 15 || f[0] != name {
				continue
			}
			if f[1] != string(tfv1.JobRunning) {
				t.Fatalf("%s is %s before its step passed %d, want it Running (its chief waits for the test):\n%s", name, f[1], after, r.stdout)
			}
			if n, err := strconv.ParseInt(f[12], 10, 64); err == nil && n > after {
				step = n
				return true, nil
			}
		}
		time.Sleep(time.Second) // each look reads S3
		return false, fmt.Errorf("tfk8s list -o wide: %s%s", r.stdout, r.stderr)
	})
	return step
}

// startRelease serves a URL that answers 503 until release is called and 200 after:
// a pod waits on it for the test's say-so. It listens in a network namespace of the
// test's own beyond the host, as a server on the internet would, since pods reach no
// port of the host's but the cluster's own services.
func startRelease(t *testing.T) (url string, release func()) {
	t.Helper()
	name, addr := newOutside(t)
	ln := listenIn(t, name, addr+":8080")
	released := make(chan struct{})
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-released:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	var once sync.Once
	return "http://" + ln.Addr().String() + "/release", func() { once.Do(func() { close(released) }) }
}

// trainRun is the run of the chief's training summaries, or "".
func trainRun(runs []string) string {
	for _, r := range runs {
		if strings.HasPrefix(r, "chief-0/") && strings.HasSuffix(r, "logs/train") {
			return r
		}
	}
	return ""
}

// getJSON decodes what TensorBoard's HTTP API answers at u.
func getJSON(u string, v any) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// screenshotScalars opens TensorBoard's time series of the job in Chromium, waits for
// the epoch_loss chart, and writes a screenshot: into docs/ when
// TFK8S_UPDATE_SCREENSHOTS is set (the README shows it), else into the test's
// directory. A blank page (one colour, or a few) fails.
func screenshotScalars(t *testing.T, base string) {
	bctx := browser.Start(t)
	// SVG rather than WebGL, which headless Chromium without a GPU may leave blank.
	if err := browser.Open(bctx, base+"?forceSVG=true#timeseries", "body"); err != nil {
		t.Fatal(err)
	}
	if _, err := browser.WaitText(bctx, "body", "epoch_loss", time.Minute); err != nil {
		t.Fatal(err)
	}
	// The charts are drawn once their data arrived: wait for a polyline in one.
	if n := waitCount(bctx, `svg path[d*="L"]`, time.Minute); n == 0 {
		t.Errorf("no chart drawn on %s#timeseries", base)
	}
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	colours := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("the screenshot has %d colours: a blank page", len(colours))
	}
	dir := t.TempDir()
	if os.Getenv("TFK8S_UPDATE_SCREENSHOTS") != "" {
		dir = filepath.Join("..", "..", "docs")
	}
	path := filepath.Join(dir, "tensorboard.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of TensorBoard's time series: %s (%dx%d, %d colours)", path, b.Dx(), b.Dy(), len(colours))
}

// waitCount waits up to timeout for selector to match something, and returns how
// many nodes it matched last.
func waitCount(ctx context.Context, selector string, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n, err := browser.Count(ctx, selector)
		if (err == nil && n > 0) || time.Now().After(deadline) {
			return n
		}
		time.Sleep(200 * time.Millisecond)
	}
}
