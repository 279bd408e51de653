package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

// The agent's usage sampler: what it costs a replica (issue 39's goal: under 1% of one
// core and 10 MB).

// samplerGoalCore and samplerGoalBytes are the goal: a fraction of one core, bytes.
const (
	samplerGoalCore  = 0.01
	samplerGoalBytes = 10 << 20
)

// agentUsage is what one agent process used over its run.
type agentUsage struct {
	cpu     time.Duration // user and system time
	peakRSS int64         // bytes
	wall    time.Duration
}

// BenchmarkUsageSampler runs two agents side by side, each over the same idle command
// for the same time, uploading to the same S3 server every 10 s: one samples its
// cgroup every 2 s and stores usage.json at each upload; the other runs in a mount
// namespace whose /sys/fs/cgroup is an empty tmpfs, so it finds no cgroup and samples
// nothing. The difference of their CPU time and peak resident memory is the sampler's
// cost, measured together so that the machine's load weighs on both alike.
func BenchmarkUsageSampler(b *testing.B) {
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		b.Fatal(err)
	}
	agent := filepath.Join(bin, "tfk8s-agent")
	if _, err := os.Stat(agent); err != nil {
		b.Fatalf("no tfk8s-agent in %s: make build", bin)
	}
	srv := s3server.Start(b)
	d := time.Duration(sized(60, 6)) * time.Second
	var with, without agentUsage
	for b.Loop() {
		var wg sync.WaitGroup
		var errWith, errWithout error
		wg.Go(func() { with, errWith = runAgent(b, agent, srv, "with", d, false) })
		wg.Go(func() { without, errWithout = runAgent(b, agent, srv, "without", d, true) })
		wg.Wait()
		if errWith != nil || errWithout != nil {
			b.Fatalf("agent with the sampler: %v; without: %v", errWith, errWithout)
		}
	}
	b.StopTimer()
	checkUsageStored(b, srv)
	cpu := (with.cpu - without.cpu).Seconds() / with.wall.Seconds()
	mem := with.peakRSS - without.peakRSS
	var table strings.Builder
	fmt.Fprintf(&table, "| agent over `sleep %.0f` | CPU time | of one core | peak RSS |\n|---|---:|---:|---:|\n", d.Seconds())
	for _, r := range []struct {
		name string
		u    agentUsage
	}{{"with the sampler (every 2 s)", with}, {"without (no cgroup found)", without}} {
		fmt.Fprintf(&table, "| %s | %.3f s | %.3f%% | %s |\n", r.name, r.u.cpu.Seconds(), 100*r.u.cpu.Seconds()/r.u.wall.Seconds(), storage.FormatBytes(r.u.peakRSS))
	}
	fmt.Fprintf(&table, "| **the sampler's cost** | %.3f s | **%.3f%%** (goal < %.0f%%) | **%s** (goal < %s) |\n",
		(with.cpu - without.cpu).Seconds(), 100*cpu, 100*samplerGoalCore, storage.FormatBytes(mem), storage.FormatBytes(samplerGoalBytes))
	fmt.Printf("\nusage sampler, one replica's agent:\n%s\n", table.String())
	writeReport(b, "Usage sampler: the cost per replica", "`BenchmarkUsageSampler`, "+time.Now().UTC().Format("2006-01-02")+
		": two agents side by side on the same idle command, one sampling its cgroup, one finding none.\n\n"+table.String())
	b.ReportMetric(100*cpu, "%core-sampler")
	b.ReportMetric(float64(mem)/1e6, "MB-sampler")
	if !smoke && (cpu > samplerGoalCore || mem > samplerGoalBytes) {
		b.Errorf("the sampler costs %.3f%% of a core and %s, over the goal", 100*cpu, storage.FormatBytes(mem))
	}
}

// runAgent runs the agent over `sleep d` as replica name of job sampler, in a mount
// namespace of its own; hideCgroup mounts an empty tmpfs on /sys/fs/cgroup first.
func runAgent(b *testing.B, agent string, srv *s3server.Server, name string, d time.Duration, hideCgroup bool) (agentUsage, error) {
	script := `exec "$@"`
	if hideCgroup {
		script = `mount -t tmpfs none /sys/fs/cgroup && exec "$@"`
	}
	dest := fmt.Sprintf("s3://%s/sampler/", srv.Bucket)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", agent, "run",
		"--artifacts-destination", dest, "--artifacts-interval", "10s", "--job-name", "sampler", "--replica", name,
		"--namespace", "default", "--run", "r1", "--log-dir", b.TempDir(), "--s3-insecure", "--", "sleep", fmt.Sprint(d.Seconds()))
	cmd.Env = append(os.Environ(), srv.Env()...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return agentUsage{}, fmt.Errorf("%v: %v", cmd.Args, err)
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		return agentUsage{}, fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
	}
	return agentUsage{cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), peakRSS: peak(), wall: time.Since(start)}, nil
}

// watchPeakRSS reads pid's high-water mark of resident memory every 200 ms until it
// exits; the function returned waits for that and gives the last mark read. The
// kernel's own figure at exit (wait4's maxrss) will not do: it keeps the mark of the
// benchmark's process, forked before the exec.
func watchPeakRSS(pid int) func() int64 {
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n := processPeakRSS(pid)
			if n < 0 {
				return
			}
			peak = max(peak, n)
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() int64 { <-done; return peak }
}

// checkUsageStored fails unless the agent with the sampler stored its usage record and
// the one without did not: else the two did not differ by the sampler.
func checkUsageStored(b *testing.B, srv *s3server.Server) {
	c := srv.Client(b)
	run := storage.RunPrefix(storage.URI{Bucket: srv.Bucket, Key: "sampler/"}, "default", "sampler", "r1")
	for name, want := range map[string]bool{"with": true, "without": false} {
		exists, err := c.Exists(b.Context(), run.Join(name+"/"+storage.UsageName))
		if err != nil || exists != want {
			b.Fatalf("usage record of the agent %s the sampler: stored %v (%v), want %v", name, exists, err, want)
		}
	}
}
