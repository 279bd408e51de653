package agent

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/tfk8s/tfk8s/internal/nvml"
	"github.com/tfk8s/tfk8s/internal/nvml/nvmltest"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestGPUTally(t *testing.T) {
	var g gpuTally
	u := &storage.Usage{}
	for _, rs := range [][]nvml.Reading{
		{{Index: 0, UtilizationPercent: 20, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 16 << 30}},
		{{Index: 0, UtilizationPercent: 80, MemoryUsedBytes: 3 << 30, MemoryTotalBytes: 16 << 30},
			{Index: 1, UtilizationPercent: 10, MemoryUsedBytes: 2 << 30, MemoryTotalBytes: 16 << 30}},
		nil, // no new sample since the last, as once the sampler has stopped
	} {
		g.add(u, rs)
	}
	want := []storage.GPUUsage{
		{Index: 0, Samples: 2, UtilizationMeanPercent: 50, UtilizationPeakPercent: 80, MemoryPeakBytes: 3 << 30, MemoryTotalBytes: 16 << 30},
		{Index: 1, Samples: 1, UtilizationMeanPercent: 10, UtilizationPeakPercent: 10, MemoryPeakBytes: 2 << 30, MemoryTotalBytes: 16 << 30},
	}
	if diff := gocmp.Diff(want, u.GPUs); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}
	if got, want := u.GPUSummary(), "2 GPUs 30% (peak 80%) 3.0 GiB/16.0 GiB"; got != want {
		t.Errorf("GPUSummary() = %q, want %q", got, want)
	}
	// A GPU NVML never read keeps its index but counts in no figure.
	var g2 gpuTally
	u2 := &storage.Usage{}
	g2.add(u2, []nvml.Reading{{Index: 1, UtilizationPercent: 60, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 16 << 30}})
	if got, want := u2.GPUSummary(), "60% (peak 60%) 1.0 GiB/16.0 GiB"; len(u2.GPUs) != 2 || got != want {
		t.Errorf("with GPU 0 unread: %d GPUs, GPUSummary() = %q, want 2 and %q", len(u2.GPUs), got, want)
	}
}

// The agent runs tfk8s-nvml, built as make build builds it, which loads a fake
// libnvidia-ml.so.1 found on the loader's path as the driver's would be; the usage
// record then holds each GPU's figures. Without the library it holds none and the
// log says nothing; with a library whose NVML will not start, the log says why once.
func TestUsageRecordsGPUs(t *testing.T) {
	cmd := nvmltest.Command(t)
	dir := filepath.Join("testdata", "cgroup", "v1")
	cg, err := findCgroup(filepath.Join(dir, "self-cgroup"), filepath.Join(dir, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	// An image without the loader tfk8s-nvml names: exec finds no interpreter.
	noLoader := filepath.Join(t.TempDir(), "tfk8s-nvml")
	if err := os.WriteFile(noLoader, []byte("#!/lib/no-such-loader.so\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		lib     func(dir string) string
		wantGPU bool
		wantLog string
		cmd     string // tfk8s-nvml if empty
	}{
		{"GPUs", func(dir string) string { return nvmltest.Build(t, dir) }, true, "", ""},
		{"no library", func(dir string) string { return "" }, false, "", ""},
		{"one GPU unreadable", func(dir string) string {
			return nvmltest.Build(t, dir, "-DFAKE_UTIL_FAIL=3", "-DFAKE_UTIL_FAIL_INDEX=0")
		}, true, "no figures for GPU 0: nvmlDeviceGetUtilizationRates: NVML_ERROR_NOT_SUPPORTED", ""},
		{"driver not loaded", func(dir string) string { return nvmltest.Build(t, dir, "-DFAKE_INIT=9") }, false,
			"tfk8s-nvml: no GPU figures: nvmlInit_v2: NVML_ERROR_DRIVER_NOT_LOADED", ""},
		{"no C library loader in the image", func(dir string) string { return "" }, false, "", noLoader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			libDir := t.TempDir()
			tc.lib(libDir)
			t.Setenv("LD_LIBRARY_PATH", libDir)
			var out bytes.Buffer
			// The agent's reaper waits for every child: the sampler's status must
			// still reach it.
			rp, err := startReaper()
			if err != nil {
				t.Fatal(err)
			}
			defer rp.close()
			r := &usageRecorder{cg: cg, now: time.Now, interval: 20 * time.Millisecond, stride: 1}
			stop, done := make(chan struct{}), make(chan struct{})
			stopGPUs := r.startGPUs(cmp.Or(tc.cmd, cmd), rp.startSampler, &logger{out: &out})
			go func() {
				defer close(done)
				r.run(stop, &logger{out: &out})
			}()
			if tc.wantGPU {
				waitFor(t, func() bool { u := r.record(1); return u != nil && len(u.GPUs) == 2 && u.GPUs[1].Samples >= 2 })
			}
			stopGPUs()
			close(stop)
			<-done
			u := r.record(1)
			if tc.wantGPU {
				g := u.GPUs[1]
				if g.UtilizationPeakPercent != 47 || g.UtilizationMeanPercent != 47 || g.MemoryPeakBytes != 2<<30 || g.MemoryTotalBytes != 16<<30 {
					t.Errorf("GPU 1 = %+v, want 47%% busy, 2 GiB of 16 GiB", g)
				}
				// Once the sampler has ended, the final sample may count its last
				// reading; a sample after that, and the final upload's, count none
				// again: a reading counts once.
				r.sampleFinal(&logger{out: &out})
				before := r.record(1)
				r.mu.Lock()
				r.sample(&logger{out: &out})
				r.mu.Unlock()
				r.sampleDue(&logger{out: &out})
				after := r.record(1)
				if after.Samples != before.Samples+1 || after.GPUs[1].Samples != before.GPUs[1].Samples {
					t.Errorf("a sample after the sampler ended: %d samples, GPU 1's %d; want %d, %d",
						after.Samples, after.GPUs[1].Samples, before.Samples+1, before.GPUs[1].Samples)
				}
			} else if u != nil && len(u.GPUs) != 0 {
				t.Errorf("GPUs = %+v, want none", u.GPUs)
			}
			if log := out.String(); !strings.Contains(log, tc.wantLog) || (tc.wantLog == "" && log != "") || strings.Count(log, "\n") > 1 {
				t.Errorf("log %q, want %q alone", log, tc.wantLog)
			}
		})
	}
}

// tfk8s-nvml loads libraries from the user's image: it must hold neither the storage
// credentials nor CAP_SYS_PTRACE, with which it could read them from the agent.
func TestSamplerHoldsNoCredentials(t *testing.T) {
	t.Setenv(tfjob.EnvSecretAccessKey, "secret")
	t.Setenv("TFK8S_S3_BUCKET", "bucket")
	dir := t.TempDir()
	cmd := filepath.Join(dir, "tfk8s-nvml")
	script := "#!/bin/sh\nenv > " + dir + "/env\ngrep CapBnd /proc/$$/status > " + dir + "/caps\nexit 3\n"
	if err := os.WriteFile(cmd, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rp, err := startReaper()
	if err != nil {
		t.Fatal(err)
	}
	defer rp.close()
	var out bytes.Buffer
	s, stop := startGPUSampler(rp.startSampler, cmd, time.Second, &logger{out: &out})
	if s == nil {
		t.Fatalf("no sampler started: %s", out.String())
	}
	<-s.Done()
	stop()
	env, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{tfjob.EnvSecretAccessKey, "TFK8S_S3_BUCKET"} {
		if strings.Contains(string(env), name+"=") {
			t.Errorf("tfk8s-nvml's environment holds %s", name)
		}
	}
	if !strings.Contains(string(env), "PATH=") {
		t.Errorf("tfk8s-nvml's environment lacks PATH:\n%s", env)
	}
	if inBoundingSet(unix.CAP_SYS_PTRACE) {
		caps, err := os.ReadFile(filepath.Join(dir, "caps"))
		if err != nil {
			t.Fatal(err)
		}
		var bnd uint64
		if _, err := fmt.Sscanf(string(caps), "CapBnd:\t%x", &bnd); err != nil {
			t.Fatalf("reading %q: %v", caps, err)
		}
		if bnd&(1<<unix.CAP_SYS_PTRACE) != 0 {
			t.Errorf("tfk8s-nvml holds CAP_SYS_PTRACE: %s", caps)
		}
	}
	if out.Len() != 0 {
		t.Errorf("log %q, want nothing (exit 3: no NVML)", out.String())
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}
