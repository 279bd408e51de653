package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfk8s/tfk8s/internal/dashboard"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// storeRun stores a run of a TFJob that no longer exists, submitted ago with labels,
// as its agents and the controller left it under the run layout: its record, and its
// chief's progress.
func storeRun(t *testing.T, srv *s3server.Server, ns, name, uid string, ago time.Duration, labels map[string]string, rec *tfevents.Progress) {
	t.Helper()
	job := testutil.MakeTFJob(name, ns).Chief().Workers(2).Obj()
	job.UID, job.Labels = types.UID(uid), labels
	run := storage.RunPrefix(jobs.DefaultDestination(srv.Config()), ns, name, tfjob.RunID(uid))
	record := tfjob.RunRecord{Namespace: ns, Name: name, UID: uid, Run: tfjob.RunID(uid), Labels: labels, Submitted: time.Now().Add(-ago), Job: job}
	for u, v := range map[storage.URI]any{run.Join(storage.RunRecordName): record, run.Join("chief-0/", storage.ProgressName): rec} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Client(t).PutObject(context.Background(), u, bytes.NewReader(b), int64(len(b)), storage.UploadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompareRuns: the Runs page lists two runs whose TFJobs are gone, read from S3
// with the namespace's runs Secret; a run's page draws its curves; ticking both and pressing Compare draws each
// scalar with a line per run, whose points read back from the charts are the stored
// ones, and puts their final scalars side by side. A user who may not read the Secret
// gets 403 and no run.
func TestCompareRuns(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	srv := s3server.Start(t)
	data := jobs.SecretData(srv.Endpoint, true, srv.Config())
	data[tfjob.SecretKeyBucket] = []byte(srv.Bucket)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dashboard.RunsSecret}, Data: data}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	records := map[string]*tfevents.Progress{
		"mnist/0f3a9c2e":  trainingRecord(200, 0, true),
		"resnet/1b2c3d4e": trainingRecord(150, 0.3, true),
	}
	// mnist was submitted an hour ago by team vision, resnet three hours ago by another.
	storeRun(t, srv, ns, "mnist", "0f3a9c2e-0000-4000-8000-000000000000", time.Hour, map[string]string{"team": "vision"}, records["mnist/0f3a9c2e"])
	storeRun(t, srv, ns, "resnet", "1b2c3d4e-0000-4000-8000-000000000000", 3*time.Hour, map[string]string{"team": "speech"}, records["resnet/1b2c3d4e"])
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/runs?namespace="+ns, "table.runs"); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.run")].map(r => r.dataset.run)`))
	if err != nil || !slices.Equal(rows, []string{"mnist/0f3a9c2e", "resnet/1b2c3d4e"}) {
		t.Fatalf("the Runs page lists %q (%v), want both runs", rows, err)
	}
	if text, err := browser.Text(ctx, `tr[data-run="mnist/0f3a9c2e"]`); err != nil || !strings.Contains(text, "chief:1,worker:2") || !strings.Contains(text, "0.181818") {
		t.Errorf("mnist's row reads %q (%v), want its replicas and its last loss", text, err)
	}
	// The filters keep the runs started within a duration, or of the labels selected.
	for _, tc := range []struct {
		since, selector string
		want            []string
	}{{"2h", "", []string{"mnist/0f3a9c2e"}}, {"", "team!=vision", []string{"resnet/1b2c3d4e"}}, {"4h", "team in (vision,speech)", []string{"mnist/0f3a9c2e", "resnet/1b2c3d4e"}}, {"2h", "team=speech", nil}} {
		// As a user types; chromedp's SetValue refuses an empty value.
		set := fmt.Sprintf(`document.getElementById("since").value = %q; document.getElementById("selector").value = %q`, tc.since, tc.selector)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](set)); err != nil {
			t.Fatal(err)
		}
		if err := browser.Submit(ctx, "#filters button"); err != nil {
			t.Fatal(err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("tr.run")].map(r => r.dataset.run)`))
		if err != nil || !slices.Equal(rows, tc.want) {
			t.Errorf("since %q, selector %q: the Runs page lists %q (%v), want %q", tc.since, tc.selector, rows, err, tc.want)
		}
	}
	// A run's page draws its replicas' curves.
	if err := browser.Open(ctx, base+"/runs/"+ns+"/mnist/0f3a9c2e", "#curves figure.curve canvas"); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(stored(map[string]*tfevents.Progress{"chief-0": records["mnist/0f3a9c2e"]}), plotted(t, ctx)); d != "" {
		t.Errorf("the run page's plotted points (-stored +plotted):\n%s", d)
	}
	if err := browser.Open(ctx, base+"/runs?namespace="+ns, "table.runs"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[value="mnist/0f3a9c2e"]`)), chromedp.Click(chromedp.CSS(`input[value="resnet/1b2c3d4e"]`))); err != nil {
		t.Fatal(err)
	}
	if err := browser.Submit(ctx, "#compare-button"); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#curves figure.curve canvas"))); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(stored(records), plotted(t, ctx)); d != "" {
		t.Errorf("the plotted points (-stored +plotted):\n%s", d)
	}
	table, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll("#final-scalars tr")].map(r => [...r.cells].map(c => c.innerText.trim()))`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(finalScalars(records, "mnist/0f3a9c2e", "resnet/1b2c3d4e"), table); d != "" {
		t.Errorf("the final scalars (-stored +shown):\n%s", d)
	}
	for _, line := range browser.Console(ctx) {
		if strings.Contains(line, "Content Security Policy") || strings.Contains(line, "Error") {
			t.Errorf("the page's console: %s", line)
		}
	}
	compare := base + "/runs/" + ns + "/compare?run=mnist/0f3a9c2e&run=resnet/1b2c3d4e"
	if err := browser.Screenshot(ctx, compare, "#curves figure.curve canvas", screenshotPath(t, "dashboard-runs.png")); err != nil {
		t.Error(err)
	}

	// In the cluster, a user who may read jobs but not Secrets.
	carol := userWithRules(t, ns, "carol", false)
	inCluster, _ := startDashboardWithEnv(t, "default", nil, "--in-cluster", "--allowed-s3-endpoint", srv.Endpoint)
	ctx = browser.Start(t)
	signIn(t, ctx, inCluster, carol)
	if code, text := status(t, ctx, inCluster+"/runs?namespace="+ns); code != http.StatusForbidden || strings.Contains(text, "0f3a9c2e") {
		t.Errorf("carol's runs: %d %q, want 403 and no run", code, text)
	}
}

// finalScalars is the compare view's table of records' runs, as it should read: the
// header, the step, then each scalar's last value in each run, sorted by scalar.
func finalScalars(records map[string]*tfevents.Progress, names ...string) [][]string {
	table := [][]string{append([]string{"Scalar"}, names...)}
	step := []string{"step"}
	scalars := map[string]bool{}
	for _, name := range names {
		step = append(step, strconv.FormatInt(records[name].Step, 10))
		for k := range records[name].Scalars {
			scalars[k] = true
		}
	}
	table = append(table, step)
	for _, k := range slices.Sorted(maps.Keys(scalars)) {
		row := []string{k}
		for _, name := range names {
			row = append(row, strconv.FormatFloat(float64(records[name].Scalars[k].Value), 'g', 6, 64))
		}
		table = append(table, row)
	}
	return table
}
