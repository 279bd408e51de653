package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
)

// usageRecord is a usage record of n samples 2 s apart from start: cores rising to
// about 2, memory growing by 10 MiB a sample from base MiB.
func usageRecord(start time.Time, n int, base int64) *storage.Usage {
	u := &storage.Usage{Start: start, Samples: n}
	for i := range n {
		u.Series = append(u.Series, storage.UsagePoint{Time: start.Add(time.Duration(2*i) * time.Second),
			CPUCores: 2 * float64(i) / float64(n), MemoryBytes: (base + 10*int64(i)) << 20})
	}
	return u
}

// TestJobPageDrawsUsageCurves: beside the training curves, the job page draws each
// replica's CPU and memory over the seconds since the first sample, whose points read
// back from the charts are the stored usage records'; both sets of charts stay drawn.
func TestJobPageDrawsUsageCurves(t *testing.T) {
	ns, srv, job := createStoringJob(t, "usage")
	storeProgress(t, srv, job, "chief-0", trainingRecord(50, 0, true))
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	usage := map[string]*storage.Usage{"chief-0": usageRecord(start, 5, 100), "worker-0": usageRecord(start.Add(4*time.Second), 4, 300)}
	for replica, u := range usage {
		storeRecord(t, srv, job, replica, storage.UsageName, u)
	}
	base, _ := startDashboard(t, ns)
	ctx := browser.Start(t)
	if err := browser.Open(ctx, base+"/jobs/"+ns+"/usage", "#usage-curves figure.curve canvas"); err != nil {
		t.Fatal(err)
	}
	want := browser.Points{"usage/cpu (cores)": {}, "usage/memory (MiB)": {}}
	for replica, u := range usage {
		for _, p := range u.Series {
			at := p.Time.Sub(start).Seconds()
			want["usage/cpu (cores)"][replica] = append(want["usage/cpu (cores)"][replica], [2]float64{at, p.CPUCores})
			want["usage/memory (MiB)"][replica] = append(want["usage/memory (MiB)"][replica], [2]float64{at, float64(p.MemoryBytes >> 20)})
		}
	}
	got, err := browser.PlottedIn(ctx, "#usage-curves")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the plotted usage points (-stored +plotted):\n%s", d)
	}
	if training := plotted(t, ctx); len(training["logs/train/loss"]["chief-0"]) == 0 {
		t.Errorf("the training curves are gone beside the usage curves: %v", training)
	}
	axis, err := browser.Text(ctx, "#usage-curves figure.curve")
	if err != nil || !strings.Contains(axis, "seconds") {
		t.Errorf("the usage charts' x axis reads %q (%v), want seconds", axis, err)
	}
	for _, line := range browser.Console(ctx) {
		t.Errorf("the page's console: %s", line)
	}
}
