package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
)

func TestUsageRecord(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	r := &usageRecorder{stride: 1, cpus: 2, rec: storage.Usage{Source: "cgroup v2"}}
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

// An upload's sample a moment after the ticker's updates the totals and adds no
// point, and no rate goes past the node's CPUs: on a loaded node a sample can be
// stamped late, and over a short window that showed cores the container never had.
func TestUsageRateWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	r := &usageRecorder{stride: 1, cpus: 2}
	r.add(cgroupSample{cpuSeconds: 0, workingSet: 100 << 20}, t0)
	r.add(cgroupSample{cpuSeconds: 1.5, workingSet: 200 << 20}, t0.Add(1900*time.Millisecond))
	r.add(cgroupSample{cpuSeconds: 1.8, workingSet: 250 << 20}, t0.Add(2*time.Second))
	r.add(cgroupSample{cpuSeconds: 6, workingSet: 150 << 20}, t0.Add(3*time.Second))
	got := r.record(1)
	want := &storage.Usage{
		Attempt: 1, Start: t0, Updated: t0.Add(3 * time.Second), Samples: 3,
		CPUSeconds: 6, CPUCoresMean: 2, CPUCoresPeak: 2,
		MemoryMeanBytes: 150 << 20, MemoryPeakBytes: 250 << 20,
		Series: []storage.UsagePoint{
			{Time: t0, MemoryBytes: 100 << 20},
			{Time: t0.Add(1900 * time.Millisecond), CPUCores: 1.5 / 1.9, MemoryBytes: 200 << 20},
			{Time: t0.Add(3 * time.Second), CPUCores: 2, MemoryBytes: 150 << 20},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
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
