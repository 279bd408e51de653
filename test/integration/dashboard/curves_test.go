package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// trainingRecord is a progress record as an agent stores it after steps training
// steps, one summary every 10: a falling loss, a rising accuracy (on the chief only)
// and a validation loss, shifted by the replica's offset so the lines differ.
func trainingRecord(steps int64, offset float64, chief bool) *tfevents.Progress {
	p := &tfevents.Progress{Updated: time.Now(), Scalars: map[string]tfevents.Last{}, Series: map[string][]tfevents.Point{}}
	add := func(key string, step int64, v float64) {
		p.Series[key] = append(p.Series[key], tfevents.Point{Step: step, Value: tfevents.Value(v)})
		p.Scalars[key] = tfevents.Last{Step: step, Value: tfevents.Value(v)}
	}
	for step := int64(0); step <= steps; step += 10 {
		add("logs/train/loss", step, 2/(1+float64(step)/20)+offset)
		if chief {
			add("logs/train/accuracy", step, 1-1/(1+float64(step)/15))
			if step%20 == 0 {
				add("logs/validation/loss", step, 2.2/(1+float64(step)/25))
			}
		}
		p.Step = step
	}
	return p
}

// storeProgress stores rec as replica's progress.json, where its agent stores it.
func storeProgress(t *testing.T, srv *s3server.Server, job *tfv1.TFJob, replica string, rec *tfevents.Progress) {
	t.Helper()
	storeRecord(t, srv, job, replica, storage.ProgressName, rec)
}

// storeRecord stores rec as JSON in replica's file name, where its agent stores it.
func storeRecord(t *testing.T, srv *s3server.Server, job *tfv1.TFJob, replica, name string, rec any) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	run := storage.RunPrefix(storage.URI{Bucket: srv.Bucket, Key: "runs/"}, job.Namespace, job.Name, tfjob.RunID(string(job.UID)))
	u := run.Join(replica+"/", name)
	if err := srv.Client(t).PutObject(context.Background(), u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
}

// plotted are the points of each chart's lines, as the page's uPlot charts hold them.
func plotted(t *testing.T, ctx context.Context) browser.Points {
	t.Helper()
	got, err := browser.Plotted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// stored are the points of records' series in plotted's shape.
func stored(records map[string]*tfevents.Progress) browser.Points {
	want := browser.Points{}
	for replica, rec := range records {
		for key, points := range rec.Series {
			if want[key] == nil {
				want[key] = map[string][][2]float64{}
			}
			for _, p := range points {
				want[key][replica] = append(want[key][replica], [2]float64{float64(p.Step), float64(p.Value)})
			}
		}
	}
	return want
}

// TestJobPageDrawsCurves: the job page shows the step and loss of the chief's stored
// progress record and draws each scalar over steps, one line per replica that
// records it, whose points read back from the charts are the stored ones; a newer
// record reaches the same charts while the job runs, without a reload. A user who
// may not read the job's storage Secret gets 403 and no figure.
func TestJobPageDrawsCurves(t *testing.T) {
	ns, srv, job := createStoringJob(t, "curves")
	records := map[string]*tfevents.Progress{"chief-0": trainingRecord(200, 0, true), "worker-0": trainingRecord(190, 0.1, false)}
	for replica, rec := range records {
		storeProgress(t, srv, job, replica, rec)
	}
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)
	page := base + "/jobs/" + ns + "/curves"

	if err := browser.Open(ctx, page, "#curves figure.curve canvas"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(stored(records), plotted(t, ctx)); d != "" {
		t.Errorf("the plotted points (-stored +plotted):\n%s", d)
	}
	for selector, want := range map[string]string{"#progress-step": "200", "#progress-loss": "0.181818", "#progress-updated": "from chief-0's summaries"} {
		if text, err := browser.Text(ctx, selector); err != nil || !strings.Contains(text, want) {
			t.Errorf("%s reads %q (%v), want %q", selector, text, err, want)
		}
	}
	if err := browser.Screenshot(ctx, page, "#curves figure.curve canvas", screenshotPath(t, "dashboard-curves.png")); err != nil {
		t.Error(err)
	}

	// A newer record: the page's refresh brings it into the charts it drew.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.drawn = document.querySelector("#curves figure.curve")) !== null`)); err != nil {
		t.Fatal(err)
	}
	records["chief-0"] = trainingRecord(260, 0, true)
	storeProgress(t, srv, job, "chief-0", records["chief-0"])
	if text, err := browser.WaitText(ctx, "#progress-step", "260", wait); err != nil {
		t.Fatalf("the step after a newer record: %v (%q)", err, text)
	}
	// The step shows once htmx has swapped the section in; the charts move into it a
	// moment later, once htmx has settled it (htmx.onLoad): wait for them too.
	deadline := time.Now().Add(wait)
	d := cmp.Diff(stored(records), plotted(t, ctx))
	for d != "" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		d = cmp.Diff(stored(records), plotted(t, ctx))
	}
	if d != "" {
		t.Errorf("the plotted points after a refresh, %s after the step (-stored +plotted):\n%s", wait, d)
	}
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.drawn === document.querySelector("#curves figure.curve")`)); err != nil || !same {
		t.Errorf("the refresh drew a new chart rather than updating the one drawn (%v)", err)
	}
	for _, line := range browser.Console(ctx) {
		if strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Error") {
			t.Errorf("the page's console: %s", line)
		}
	}

	// In the cluster, a user who may read the job but not its storage Secret.
	carol := userWithRules(t, ns, "carol", false)
	inCluster, _ := startDashboardWithEnv(t, "default", nil, "--in-cluster", "--allowed-s3-endpoint", srv.Endpoint)
	ctx = browser.Start(t)
	signIn(t, ctx, inCluster, carol)
	if code, text := status(t, ctx, inCluster+"/jobs/"+ns+"/curves/progress"); code != http.StatusForbidden || strings.Contains(text, "0.181818") {
		t.Errorf("carol's progress: %d %q, want 403 and no figure", code, text)
	}
	if err := browser.Open(ctx, inCluster+"/jobs/"+ns+"/curves", "#job-name"); err != nil {
		t.Fatal(err)
	}
	if text, err := browser.WaitText(ctx, "#progress", `secrets "s3-credentials" is forbidden`, wait); err != nil {
		t.Errorf("carol's job page: %v (progress %q)", err, text)
	}
	if n, err := browser.Count(ctx, "#curves figure.curve"); err != nil || n != 0 {
		t.Errorf("carol's job page draws %d charts (%v), want none", n, err)
	}
}

// createStoringJob creates a job of a chief and a worker, named name, in a namespace
// of its own, that stores under runs/ in a new S3 server whose Secret it names.
func createStoringJob(t *testing.T, name string) (string, *s3server.Server, *tfv1.TFJob) {
	t.Helper()
	ns := testutil.Namespace(t, k8sClient)
	srv := s3server.Start(t)
	createStorageSecret(t, ns, srv)
	job := testutil.MakeTFJob(name, ns).Chief().Workers(1).Obj()
	job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://" + srv.Bucket + "/runs"}
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3-credentials"}}
	createJob(t, job)
	return ns, srv, job
}
