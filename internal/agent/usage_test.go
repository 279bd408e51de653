package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
// (here 3 cores of 2).
func TestUsageFinalRate(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	r := &usageRecorder{stride: 1, interval: 2 * time.Second}
	for i, cpu := range []float64{0, 4, 8} {
		r.add(cgroupSample{cpuSeconds: cpu}, t0.Add(time.Duration(2*i)*time.Second))
	}
	r.add(cgroupSample{cpuSeconds: 8.3}, t0.Add(4100*time.Millisecond))
	var got []float64
	for _, p := range r.record(1).Series {
		got = append(got, p.CPUCores)
	}
	if diff := cmp.Diff([]float64{0, 2, 2, (8.3 - 4) / 2.1}, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("CPU rates (-want +got):\n%s", diff)
	}
}

// However often the agent uploads, it samples its container's cgroup at least an
// interval apart, but for the final sample when the command exits, and an upload
// after that takes none. Over a busy loop on every CPU, every rate stays within the
// node's CPUs, less 10% for the kernel's counts a tick stale, and the record counts
// at least the CPU time the loop's process counted itself.
func TestUsageSamplesAnIntervalApart(t *testing.T) {
	cg, err := findCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	const interval = 250 * time.Millisecond
	var out bytes.Buffer
	log := &logger{out: &out}
	r := &usageRecorder{cg: cg, now: time.Now, interval: interval, stride: 1}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); r.run(stop, "", nil, log) }()
	waitFor(t, func() bool { return r.record(1) != nil })
	before := processCPU(t)
	var busy atomic.Bool
	busy.Store(true)
	var wg sync.WaitGroup
	defer func() { busy.Store(false); wg.Wait() }()
	for range runtime.NumCPU() {
		wg.Go(func() {
			for busy.Load() {
			}
		})
	}
	// Uploads, far more often than the agent's, each asking for a sample.
	wg.Go(func() {
		for busy.Load() {
			r.sampleDue(log)
			time.Sleep(time.Millisecond)
		}
	})
	time.Sleep(10 * interval) // the busy loop's length
	close(stop)
	<-done
	spun := processCPU(t) - before
	u := r.record(1)
	r.sampleDue(log) // the final upload's
	if after := r.record(1); after.Samples != u.Samples {
		t.Errorf("an upload after the final sample took one: %d samples, then %d", u.Samples, after.Samples)
	}
	if u.Samples < 8 || len(u.Series) != u.Samples {
		t.Fatalf("%d samples, %d points over %v; want about 11 of each: %s", u.Samples, len(u.Series), 10*interval, out.String())
	}
	cpus := float64(runtime.NumCPU())
	for i, p := range u.Series {
		if gap := p.Time.Sub(u.Series[max(i-1, 0)].Time); i > 0 && i < len(u.Series)-1 && gap < interval {
			t.Errorf("sample %d came %v after the one before, want %v at least", i, gap, interval)
		}
		if p.CPUCores > 1.1*cpus {
			t.Errorf("sample %d: %.2f cores on a node of %.0f", i, p.CPUCores, cpus)
		}
	}
	if counted := u.CPUCoresMean * u.Updated.Sub(u.Start).Seconds(); counted < 0.9*spun {
		t.Errorf("the record counts %.2f CPU-s since its first sample, the busy loop's process %.2f", counted, spun)
	}
	t.Logf("%d samples over %v, peak %.2f cores on %.0f CPUs; the busy loop counted %.2f CPU-s", u.Samples,
		u.Updated.Sub(u.Start).Round(time.Millisecond), u.CPUCoresPeak, cpus, spun)
}

// processCPU is the test process's user and system time so far, in seconds.
func processCPU(t *testing.T) float64 {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
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
