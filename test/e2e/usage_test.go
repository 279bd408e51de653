package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
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
