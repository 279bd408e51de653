package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
)

// oomProgram allocates 300 MiB, and writes to it, in a container limited to 64 MiB.
const oomProgram = `b = b"x" * (300 << 20); print("allocated", flush=True)`

// checkRunUsage: the run of a finished, deleted job still shows what worker-0's
// container used, as its agent sampled the cgroup (issue 39).
func checkRunUsage(ctx context.Context, t *testing.T, c *jobsCluster, run string) {
	t.Helper()
	u := runUsage(ctx, t, c, run)
	// Importing TensorFlow alone takes CPU seconds and well over 50 MiB. The program
	// runs for about 2 s, one sampling interval: the samples miss its working set's
	// peak, the kernel's high-water mark does not.
	if u.Samples < 1 || u.CPUSeconds < 0.5 || u.MemoryHighWaterBytes < 50<<20 || u.MemoryMeanBytes > u.MemoryPeakBytes || u.OOMKills != 0 {
		t.Errorf("usage of %s worker-0: %+v; want samples, at least 0.5 CPU-seconds, a high-water mark over 50 MiB, no OOM kill", run, *u)
	}
	r := c.mustTfk8s(ctx, t, "runs", "show", run)
	if want := `(?m)^\s+worker-0\s+1\s+\d+\.\d\d\s+\d+\.\d\d\s+\d+\.\ds\s+\d+\.\d MiB\s+\d+\.\d MiB\s+none\s+0$`; !regexp.MustCompile(want).MatchString(r.stdout) {
		t.Errorf("runs show %s lacks worker-0's usage %s:\n%s", run, want, r.stdout)
	}
	t.Logf("%s worker-0 used %.1f CPU-seconds (mean %.2f, peak %.2f cores), memory mean %s, peak %s, in %d samples",
		run, u.CPUSeconds, u.CPUCoresMean, u.CPUCoresPeak, storage.FormatBytes(u.MemoryMeanBytes), storage.FormatBytes(u.MemoryPeakBytes), u.Samples)
}

// checkOOMKilledRun: a replica that outgrows its memory limit is named with its OOM
// kill, its peak and its limit in the job's Failed condition, in describe and in its
// run (issue 39).
func checkOOMKilledRun(ctx context.Context, t *testing.T, c *jobsCluster) {
	t.Helper()
	c.mustTfk8s(ctx, t, "submit", "--name", "oom", "--image", images.Python, "--workers", "1", "--memory", "64Mi",
		"--restart-policy", "Never", "--", "python3", "-c", oomProgram)
	job := c.waitFinished(ctx, t, "oom")
	if job.Status.State != tfv1.JobFailed {
		c.fail(t, "oom %s, want Failed: %+v", job.Status.State, job.Status.Conditions)
	}
	// The agent's termination message names the replica, its limit and its peak in
	// the job's Failed condition, and so in describe.
	named := regexp.MustCompile(`worker-0 OOMKilled: the kernel killed \d+ process\(es\) at the memory limit 64\.0 MiB; peak \d+\.\d MiB charged`)
	if cond := meta.FindStatusCondition(job.Status.Conditions, string(tfv1.JobFailed)); cond == nil || !named.MatchString(cond.Message) {
		t.Errorf("oom's Failed condition does not name worker-0's OOM kill, limit and peak: %+v", job.Status.Conditions)
	}
	if r := c.mustTfk8s(ctx, t, "describe", "oom"); !named.MatchString(r.stdout) {
		t.Errorf("describe oom does not name worker-0's OOM kill, limit and peak:\n%s", r.stdout)
	}
	u := runUsage(ctx, t, c, "oom")
	if u.OOMKills < 1 || u.MemoryLimitBytes != 64<<20 || max(u.MemoryHighWaterBytes, u.MemoryPeakBytes) < 56<<20 {
		t.Errorf("usage of oom worker-0: %+v; want an OOM kill at a 64 MiB limit, with a peak near it", *u)
	}
	if r := c.mustTfk8s(ctx, t, "runs", "show", "oom"); !named.MatchString(r.stdout) {
		t.Errorf("runs show oom does not name worker-0's OOM kill, peak and limit:\n%s", r.stdout)
	}
	t.Logf("oom worker-0: %d OOM kill(s) at %s, high-water %s, working set peak %s", u.OOMKills,
		storage.FormatBytes(u.MemoryLimitBytes), storage.FormatBytes(u.MemoryHighWaterBytes), storage.FormatBytes(u.MemoryPeakBytes))
	c.mustTfk8s(ctx, t, "delete", "oom", "--wait")
}

// runUsage reads worker-0's usage record as runs show -o json prints it.
func runUsage(ctx context.Context, t *testing.T, c *jobsCluster, run string) *storage.Usage {
	t.Helper()
	r := c.mustTfk8s(ctx, t, "runs", "show", run, "-o", "json")
	var doc struct {
		Replicas []struct {
			Name  string         `json:"name"`
			Usage *storage.Usage `json:"usage"`
		} `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("runs show %s -o json: %v\n%s", run, err, r.stdout)
	}
	for _, rep := range doc.Replicas {
		if rep.Name == "worker-0" && rep.Usage != nil {
			return rep.Usage
		}
	}
	t.Fatalf("runs show %s -o json has no usage of worker-0:\n%s", run, r.stdout)
	return nil
}

// usageProgram waits 3 s, for the sampler to see its container without it, then
// allocates 300 MiB, writing every page, and holds it while two threads hash it for
// 12 s (hashlib lets go of Python's lock on large buffers, so both run at once), then
// 20 s more: metrics-server scrapes every 10 s and has a new pod's figures after two
// scrapes, and the kubelet's own figures may be 10 s old, so the allocation shows in
// the metrics API within about 30 s of the start. It prints the CPU time its process
// counted while spinning, and in all, for the test to hold the sampler's figures
// against.
const usageProgram = `import hashlib, resource, threading, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
time.sleep(3)
b = b"x" * (300 << 20)
m = memoryview(b)
def spin():
    end = time.monotonic() + 12
    while time.monotonic() < end:
        for i in range(0, len(m), 8 << 20):
            hashlib.sha256(m[i:i + (8 << 20)]).digest()
c0, w0 = cpu(), time.monotonic()
ts = [threading.Thread(target=spin) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
print("spun %.3f cpu-s in %.3f s" % (cpu() - c0, time.monotonic() - w0), flush=True)
time.sleep(20)
print("total %.3f cpu-s" % cpu(), flush=True)
`

// usageMinMiB and usageMaxMiB bound what usageProgram's 300 MiB adds to its container's
// working set, over the least sampled (the agent and the interpreter before it allocates).
const usageMinMiB, usageMaxMiB = 270, 330

// checkLiveUsage: a replica that holds 300 MiB and spins two threads shows, while it
// runs and after its job is deleted, a memory peak within 10% of 300 MiB and the
// CPU-seconds per second its threads got, in tfk8s top, runs show and its usage
// record (issue 39).
func checkLiveUsage(ctx context.Context, t *testing.T, c *jobsCluster) {
	t.Helper()
	start := time.Now()
	c.mustTfk8s(ctx, t, "submit", "--name", "usage", "--image", images.Python, "--workers", "1", "--memory", "512Mi",
		"--artifacts-interval", "3s", "--restart-policy", "Never", "--", "python3", "-c", usageProgram)
	live := waitTopWhileRunning(ctx, t, c, "usage")
	t.Logf("%.1f s after submit, tfk8s top usage:\n%skubectl top pods:\n%s", time.Since(start).Seconds(), live.out, live.kubectlTop)
	plotted := plottedUsage(ctx, t, c, "usage")
	job := c.waitFinished(ctx, t, "usage")
	if job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "usage %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	logs := c.mustTfk8s(ctx, t, "logs", "usage", "worker-0").stdout
	u := runUsage(ctx, t, c, "usage")
	checkUsageFigures(t, u, logs)
	checkLiveAgainstRecord(t, live, u)
	checkPlottedUsage(t, plotted, u)
	if r := c.mustTfk8s(ctx, t, "runs", "show", "usage"); !regexp.MustCompile(`(?m)^\s+worker-0\s+1\s.*\s512\.0 MiB\s+0$`).MatchString(r.stdout) {
		t.Errorf("runs show usage lacks worker-0's usage against its 512 MiB limit:\n%s", r.stdout)
	}
	c.mustTfk8s(ctx, t, "delete", "usage", "--wait")
	after := c.mustTfk8s(ctx, t, "top", "usage").stdout
	checkTopFromRun(t, after, u)
	if r := c.tfk8s(ctx, "top", "nosuchjob"); r.code == 0 || !strings.Contains(r.stderr, `"nosuchjob"`) {
		t.Errorf("tfk8s top nosuchjob: want an error naming the job, got %s", r)
	}
	t.Logf("usage job: %.1f s; after delete, tfk8s top usage:\n%s", time.Since(start).Seconds(), after)
}

// liveFigures are worker-0's figures as tfk8s top printed them from the metrics API
// while the job ran.
type liveFigures struct {
	out        string
	cpu, mem   float64 // cores and MiB
	kubectlTop string
}

// waitTopWhileRunning polls every 2 s until, with the job Running, tfk8s top JOB
// prints worker-0's figures from the metrics API (metrics-server, which local mode
// runs) with its working set past the allocation, and kubectl top pods prints a line
// of worker-0's pod with non-zero CPU and memory.
func waitTopWhileRunning(ctx context.Context, t *testing.T, c *jobsCluster, job string) liveFigures {
	t.Helper()
	row := regexp.MustCompile(`(?m)^worker-0\s+(\d+\.\d\d)\s+\S+\s+\S+\s+(\d+\.\d) MiB\s+512Mi\s+512Mi$`)
	var last, kubectl cliResult
	pod := job + "-worker-0"
	for deadline := time.Now().Add(c.wait); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(2 * time.Second) {
		last = c.tfk8s(ctx, "top", job)
		m := row.FindStringSubmatch(last.stdout)
		if last.code != 0 || m == nil || !strings.HasPrefix(last.stdout, "Source: metrics API (metrics.k8s.io)") || c.jobState(ctx, job) != tfv1.JobRunning {
			continue
		}
		live := liveFigures{out: last.stdout}
		live.cpu, _ = strconv.ParseFloat(m[1], 64)
		live.mem, _ = strconv.ParseFloat(m[2], 64)
		if live.mem < usageMinMiB {
			continue
		}
		pod = c.pod(ctx, t, job, "worker", 0).Name
		kubectlRow := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pod) + `\s+[1-9]\d*m\s+[1-9]\d*Mi\s*$`)
		kubectl = c.kubectl(ctx, t, "top", "pods", "-n", "default")
		if kubectl.code != 0 || !kubectlRow.MatchString(kubectl.stdout) {
			continue
		}
		live.kubectlTop = kubectl.stdout
		return live
	}
	c.fail(t, "while %s ran, tfk8s top never showed worker-0 past %d MiB from the metrics API, or kubectl top pods never showed %s; last tfk8s top: %s\nlast kubectl top pods: %s",
		job, usageMinMiB, pod, last, kubectl)
	return liveFigures{}
}

// checkLiveAgainstRecord holds the metrics API's figures, read while worker-0 held its
// allocation, against its usage record: the working set within 10% of the record's
// peak, and the CPU at most the record's peak (metrics-server's rate is over its 10-s
// scrapes, the record's peak over 2-s samples), with the jitter of a shared machine.
// The CPU may round to 0.00 cores when the scrapes fell in the program's last sleep;
// kubectl top's line, in millicores, was non-zero.
func checkLiveAgainstRecord(t *testing.T, live liveFigures, u *storage.Usage) {
	t.Helper()
	peak := float64(u.MemoryPeakBytes) / (1 << 20)
	if math.Abs(live.mem-peak) > 0.1*peak {
		t.Errorf("the metrics API's working set of worker-0, %.1f MiB, is not within 10%% of its usage record's peak %.1f MiB", live.mem, peak)
	}
	if live.cpu > 1.1*u.CPUCoresPeak+0.1 {
		t.Errorf("the metrics API's CPU of worker-0, %.2f cores, is over its usage record's peak %.2f cores", live.cpu, u.CPUCoresPeak)
	}
	t.Logf("worker-0 by the metrics API: %.2f cores, %.1f MiB; by its usage record: peak %.2f cores, %.1f MiB", live.cpu, live.mem, u.CPUCoresPeak, peak)
}

// checkUsageFigures holds the usage record against what the program allocated and
// the CPU time it counted itself. The machine's 2 cores are shared with other work,
// so the threads get up to 2 cores, not exactly 2: the sampler must agree with the
// process's own count (less the last 2-s interval's sleep), within 10% and 1 s for the
// agent's uploads every 3 s.
func checkUsageFigures(t *testing.T, u *storage.Usage, logs string) {
	t.Helper()
	spun := regexp.MustCompile(`spun (\d+\.\d+) cpu-s in (\d+\.\d+) s`).FindStringSubmatch(logs)
	total := regexp.MustCompile(`total (\d+\.\d+) cpu-s`).FindStringSubmatch(logs)
	if spun == nil || total == nil {
		t.Fatalf("usage's logs lack its CPU counts:\n%s", logs)
	}
	spunCPU, _ := strconv.ParseFloat(spun[1], 64)
	spunWall, _ := strconv.ParseFloat(spun[2], 64)
	self, _ := strconv.ParseFloat(total[1], 64)
	rate := spunCPU / spunWall
	base := u.MemoryPeakBytes
	for _, p := range u.Series {
		base = min(base, p.MemoryBytes)
	}
	if added := float64(u.MemoryPeakBytes-base) / (1 << 20); added < usageMinMiB || added > usageMaxMiB {
		t.Errorf("worker-0's working set peak %s is %.1f MiB over its least %s, want within 10%% of 300 MiB",
			storage.FormatBytes(u.MemoryPeakBytes), added, storage.FormatBytes(base))
	}
	if u.CPUSeconds < self-0.05 || u.CPUSeconds > self*1.1+1 {
		t.Errorf("worker-0 used %.2f CPU-seconds by its usage record, %.2f by its own count", u.CPUSeconds, self)
	}
	// The peak is over 2-s intervals, the program's rate over 12 s: the peak is at least
	// the rate, less the interval's jitter, and never over the 2 cores.
	if u.CPUCoresPeak < 0.9*rate || u.CPUCoresPeak > 2.2 {
		t.Errorf("worker-0's CPU peak %.2f cores; its threads got %.2f CPU-s per second", u.CPUCoresPeak, rate)
	}
	t.Logf("usage worker-0: threads got %.2f CPU-s/s by their own count, the sampler's peak %.2f cores; %.2f CPU-s in all (self %.2f); working set peak %s over %s",
		rate, u.CPUCoresPeak, u.CPUSeconds, self, storage.FormatBytes(u.MemoryPeakBytes), storage.FormatBytes(base))
}

// checkTopFromRun: after the job is deleted, tfk8s top prints worker-0's figures from
// its run, those of the usage record.
func checkTopFromRun(t *testing.T, out string, u *storage.Usage) {
	t.Helper()
	want := fmt.Sprintf(`(?m)^worker-0\s+%.2f\s+%.2f\s+-\s+-\s+%s\s+%s\s+512Mi\s+512Mi$`, u.CPUCoresMean, u.CPUCoresPeak,
		regexp.QuoteMeta(storage.FormatBytes(u.MemoryMeanBytes)), regexp.QuoteMeta(storage.FormatBytes(u.MemoryPeakBytes)))
	if !strings.HasPrefix(out, "Source: the agents' usage records (usage.json) of run usage/") || !regexp.MustCompile(want).MatchString(out) {
		t.Errorf("tfk8s top usage after delete: want the run's figures %s:\n%s", want, out)
	}
}

// plottedUsage opens the job page in Chromium, once tfk8s top has shown the
// allocation, and reads back the usage curves it draws.
func plottedUsage(ctx context.Context, t *testing.T, c *jobsCluster, job string) browser.Points {
	t.Helper()
	base := startCLI(ctx, t, c, dashboardLine, "dashboard", "--address", "127.0.0.1:0")
	bctx := browser.Start(t)
	if err := browser.Open(bctx, base+"/jobs/default/"+job, "#usage-curves figure.curve canvas"); err != nil {
		page, _ := browser.Text(bctx, "body")
		t.Fatalf("the job page draws no usage curves: %v\n%s", err, page)
	}
	got, err := browser.PlottedIn(bctx, "#usage-curves")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := browser.Console(bctx); len(msgs) > 0 {
		t.Errorf("the job page wrote to the console (a CSP violation or a script error): %q", msgs)
	}
	return got
}

// checkPlottedUsage: the usage curves drawn while the job ran are worker-0's CPU and
// memory samples, as its final usage record holds them, on the whole seconds since its
// first sample. The agent samples at least 2 s apart, but its final sample may come
// a moment after the one before, so two samples can share a second; the page, which
// caches a record up to 30 s, may have drawn either, so a plotted point must be one of
// the record's samples of that second.
func checkPlottedUsage(t *testing.T, got browser.Points, u *storage.Usage) {
	t.Helper()
	cpu, mem := got["usage/cpu (cores)"]["worker-0"], got["usage/memory (MiB)"]["worker-0"]
	if len(cpu) == 0 || len(cpu) != len(mem) || len(got) != 2 {
		t.Fatalf("the job page's usage curves: %v; want worker-0's CPU and memory", got)
	}
	recorded := map[float64][]storage.UsagePoint{}
	for _, p := range u.Series {
		at := float64(int64(p.Time.Sub(u.Series[0].Time).Seconds()))
		recorded[at] = append(recorded[at], p)
	}
	for i := range cpu {
		same := func(p storage.UsagePoint) bool {
			return math.Abs(p.CPUCores-cpu[i][1]) <= 1e-9 && math.Abs(float64(p.MemoryBytes)/(1<<20)-mem[i][1]) <= 1e-9
		}
		if mem[i][0] != cpu[i][0] || !slices.ContainsFunc(recorded[cpu[i][0]], same) {
			t.Errorf("plotted at %v s: %.3f cores, %.1f MiB; the usage record has %+v that second", cpu[i][0], cpu[i][1], mem[i][1], recorded[cpu[i][0]])
		}
	}
	t.Logf("the job page drew %d usage points of worker-0, the last %.2f cores and %.1f MiB at %v s", len(cpu), cpu[len(cpu)-1][1], mem[len(mem)-1][1], cpu[len(cpu)-1][0])
}

// kubectl runs bin/kubectl on the cluster, as a user of local mode would.
func (c *jobsCluster) kubectl(ctx context.Context, t *testing.T, args ...string) cliResult {
	t.Helper()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		code = -1
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			code = exit.ExitCode()
		}
		stderr.WriteString(err.Error())
	}
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}
