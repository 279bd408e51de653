package agent

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tfk8s/tfk8s/internal/storage"
)

func TestUsageRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	r := &usageRecorder{stride: 1, rec: storage.Usage{Source: "cgroup v2"}}
	// Two cores for two seconds, then idle; the working set rises to 300 MiB and
	// falls back, and the limit kills a process at the end.
	samples := []cgroupSample{
		{cpuSeconds: 1, workingSet: 100 << 20, limit: 512 << 20},
		{cpuSeconds: 5, workingSet: 300 << 20, highWater: 310 << 20, limit: 512 << 20},
		{cpuSeconds: 5, workingSet: 200 << 20, highWater: 310 << 20, limit: 512 << 20, oomKills: 1},
	}
	for i, s := range samples {
		r.add(s, t0.Add(time.Duration(2*i)*time.Second))
	}
	got := r.record(3)
	want := &storage.Usage{
		Attempt: 3, Source: "cgroup v2", Start: t0, Updated: t0.Add(4 * time.Second), Samples: 3,
		CPUSeconds: 5, CPUCoresMean: 1, CPUCoresPeak: 2,
		MemoryMeanBytes: 200 << 20, MemoryPeakBytes: 300 << 20, MemoryHighWaterBytes: 310 << 20,
		MemoryLimitBytes: 512 << 20, OOMKills: 1,
		Series: []storage.UsagePoint{
			{Time: t0, MemoryBytes: 100 << 20},
			{Time: t0.Add(2 * time.Second), CPUCores: 2, MemoryBytes: 300 << 20},
			{Time: t0.Add(4 * time.Second), MemoryBytes: 200 << 20},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// The final sample, taken when the command exits, may come a moment after the
// ticker's: its rate is taken from the sample before, over more than an interval,
// since a count a tick stale shows over a moment cores the container never had
// (here 3 cores of 2). A command that exits a moment after the first sample has no
// sample before: its final point has no rate, and the mean alone covers it.
func TestUsageFinalRate(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		samples  []float64 // CPU seconds, 2 s apart
		final    float64   // CPU seconds, 100 ms after the last
		want     []float64 // each point's CPU cores
		wantPeak float64
	}{
		{"after an interval", []float64{0, 4, 8}, 8.3, []float64{0, 2, 2, (8.3 - 4) / 2.1}, (8.3 - 4) / 2.1},
		{"right after the first sample", []float64{0}, 0.3, []float64{0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &usageRecorder{stride: 1, interval: 2 * time.Second}
			for i, cpu := range tc.samples {
				r.add(cgroupSample{cpuSeconds: cpu}, t0.Add(time.Duration(2*i)*time.Second))
			}
			last := time.Duration(2*(len(tc.samples)-1)) * time.Second
			r.add(cgroupSample{cpuSeconds: tc.final}, t0.Add(last+100*time.Millisecond))
			u := r.record(1)
			var got []float64
			for _, p := range u.Series {
				got = append(got, p.CPUCores)
			}
			approx := cmpopts.EquateApprox(0, 1e-9)
			if diff := cmp.Diff(tc.want, got, approx); diff != "" {
				t.Errorf("CPU rates (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPeak, u.CPUCoresPeak, approx); diff != "" {
				t.Errorf("CPU peak (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeCgroup is a cgroup v2 whose CPU count the test sets, read through the agent's
// own reader: a copy of testdata/cgroup/v2.
func fakeCgroup(t *testing.T) (cg *cgroupReader, setCPU func(seconds float64)) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "cgroup", "v2"))); err != nil {
		t.Fatal(err)
	}
	cg, err := findCgroup(filepath.Join(dir, "self-cgroup"), filepath.Join(dir, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	return cg, func(seconds float64) {
		stat := fmt.Sprintf("usage_usec %d\n", int64(math.Round(seconds*1e6)))
		if err := os.WriteFile(filepath.Join(dir, "sys", "cpu.stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// However often the agent uploads, it samples its container's cgroup an interval
// apart, but for the final sample when the command exits, and an upload after that
// takes none. On a clock the test moves: a command busy on 2 cores, with an upload
// every 100 ms, for 4.1 s; and one that exits 5 ms after it starts.
func TestUsageSamplesAnIntervalApart(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	const interval = 2 * time.Second
	for _, tc := range []struct {
		name      string
		runs      time.Duration
		wantTimes []time.Duration // of the samples, since the first
		wantCores []float64
	}{
		{"busy for 4.1 s", 4100 * time.Millisecond, []time.Duration{0, 2 * time.Second, 4 * time.Second, 4100 * time.Millisecond},
			[]float64{0, 2, 2, 2}},
		{"exits after 5 ms", 5 * time.Millisecond, []time.Duration{0, 5 * time.Millisecond}, []float64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg, setCPU := fakeCgroup(t)
			var out bytes.Buffer
			log := &logger{out: &out}
			var now time.Duration
			r := &usageRecorder{cg: cg, now: func() time.Time { return t0.Add(now) }, interval: interval, stride: 1}
			for ; now < tc.runs; now += min(100*time.Millisecond, tc.runs) {
				setCPU(2 * now.Seconds())
				wait := r.sampleDue(log)
				if since := now - r.last.at.Sub(t0); wait != interval-since {
					t.Fatalf("at %v, %v since the last sample: next due in %v, want %v", now, since, wait, interval-since)
				}
			}
			now = tc.runs
			setCPU(2 * now.Seconds())
			r.sampleFinal(log)
			now += interval
			setCPU(2 * now.Seconds())
			r.sampleDue(log) // the final upload's: takes none
			var times []time.Duration
			var cores []float64
			for _, p := range r.record(1).Series {
				times, cores = append(times, p.Time.Sub(t0)), append(cores, p.CPUCores)
			}
			if diff := cmp.Diff(tc.wantTimes, times); diff != "" {
				t.Errorf("samples' times (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCores, cores, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("samples' CPU cores (-want +got):\n%s", diff)
			}
			if u := r.record(1); math.Abs(u.CPUCoresMean-2) > 1e-9 {
				t.Errorf("mean %.3f cores, want 2", u.CPUCoresMean)
			}
			if out.Len() > 0 {
				t.Errorf("log %q, want nothing", out.String())
			}
		})
	}
}

// The recorder schedules samples on Go's monotonic clock, which a step of the node's
// clock does not move, and stores the wall time in UTC. A test cannot step the clock:
// it checks the stamp it schedules on keeps the monotonic reading.
func TestUsageSchedulesOnTheMonotonicClock(t *testing.T) {
	cg, _ := fakeCgroup(t)
	r := &usageRecorder{cg: cg, now: time.Now, interval: time.Hour, stride: 1}
	r.sampleDue(&logger{out: io.Discard})
	if r.last.at == r.last.at.Round(0) {
		t.Errorf("the sample's stamp %v has no monotonic reading", r.last.at)
	}
	if u := r.record(1); u.Start.Location() != time.UTC || u.Series[0].Time.Location() != time.UTC {
		t.Errorf("record stamped %v and %v, want UTC", u.Start, u.Series[0].Time)
	}
	if wait := r.sampleDue(&logger{out: io.Discard}); wait <= 59*time.Minute {
		t.Errorf("next sample due in %v, want about an hour", wait)
	}
}

// A long run's series stays within MaxUsagePoints, spread over the whole run.
func TestUsageSeriesBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	r := &usageRecorder{stride: 1}
	const n = 10 * storage.MaxUsagePoints
	for i := range n {
		r.add(cgroupSample{cpuSeconds: float64(i), workingSet: int64(i)}, t0.Add(time.Duration(i)*time.Second))
	}
	series := r.record(1).Series
	if len(series) != storage.MaxUsagePoints {
		t.Fatalf("%d points, want %d", len(series), storage.MaxUsagePoints)
	}
	first, last := series[0].MemoryBytes, series[len(series)-1].MemoryBytes
	if first > n/storage.MaxUsagePoints || last < n-n/storage.MaxUsagePoints {
		t.Errorf("series spans samples %d to %d of %d, want about all of them", first, last, n)
	}
	for i := 1; i < len(series); i++ {
		if series[i].Time.Before(series[i-1].Time) {
			t.Fatalf("point %d is older than the one before", i)
		}
	}
}

// An OOM kill is logged and becomes the container's termination message, naming the
// replica, its limit and its peak.
func TestLogOOM(t *testing.T) {
	dir := filepath.Join("testdata", "cgroup", "v1")
	cg, err := findCgroup(filepath.Join(dir, "self-cgroup"), filepath.Join(dir, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	terminationLog = filepath.Join(t.TempDir(), "termination-log")
	t.Cleanup(func() { terminationLog = "/dev/termination-log" })
	if err := os.WriteFile(terminationLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	r := &usageRecorder{cg: cg, now: time.Now, stride: 1}
	r.sampleFinal(&logger{out: &out})
	r.logOOM("worker-1", &logger{out: &out})
	want := "worker-1 OOMKilled: the kernel killed 1 process(es) at the memory limit 512.0 MiB; peak 500.0 MiB charged, working set peak 300.0 MiB\n"
	got, err := os.ReadFile(terminationLog)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("termination message (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), strings.TrimSpace(want)) {
		t.Errorf("log %q lacks %q", out.String(), want)
	}
}
