package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRightSizing: a run whose worker asked for 8 GiB and 4 cores and peaked at
// 1.1 GiB and 0.42 cores. While its job runs, --right-size refuses (the peaks may
// still rise); once it succeeded, before its job is deleted and after, runs show
// gives the advice, and submit --from-run --right-size sets the requests it names
// and says what it changed.
func TestRightSizing(t *testing.T) {
	f := newFixture(t)
	f.mustSucceed("submit", "--name", "adv", "--image", "tf:2.21", "--cpu", "4", "--memory", "8Gi", "--", "python3", "train.py")
	run := tfjob.RunID(string(f.getJob("adv").UID))
	f.storeUsage("adv", run, "worker-0", &storage.Usage{Attempt: 1, Samples: 30, Start: time.Now().Add(-time.Minute), Updated: time.Now(),
		CPUCoresMean: 0.3, CPUCoresPeak: 0.42, MemoryMeanBytes: 900 << 20, MemoryPeakBytes: 11 << 30 / 10, MemoryLimitBytes: 8 << 30})

	r := f.tfk8s("submit", "--from-run", "adv/"+run, "--right-size", "--dry-run")
	if want := "--right-size: run adv/" + run + " is still running"; r.code == 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("submit --right-size of a running run: %s\nwant a failure saying %q", r, want)
	}

	f.waitPods("adv", "adv-worker-0")
	kubelet().Bind(t, f.ns, "adv-worker-0", "node-a")
	kubelet().SetExited(t, f.ns, "adv-worker-0", 0)
	f.waitCondition("adv", tfv1.JobSucceeded)
	// A job that succeeded has ended, though its TFJob is not yet deleted.
	r = f.mustSucceed("submit", "--from-run", "adv/"+run, "--right-size", "--dry-run")
	if want := "--right-size: worker memory 8Gi -> 1536Mi\n"; !strings.Contains(r.stderr, want) {
		t.Errorf("submit --right-size of a job that succeeded, not yet deleted: stderr lacks %q:\n%s", want, r.stderr)
	}
	f.mustSucceed("delete", "adv", "--wait")
	shown := f.mustSucceed("runs", "show", "adv/"+run)
	for _, want := range []string{
		"Right-sizing:\n  worker: memory peak 1.1 GiB of 8.0 GiB requested; memory request 1536Mi would fit\n",
		"  worker: CPU peak 0.42 cores of 4 requested; CPU request 600m would fit\n",
		"tfk8s submit --from-run adv/" + run + " --right-size applies it, as would --memory 1536Mi --cpu 600m\n",
	} {
		if !strings.Contains(shown.stdout, want) {
			t.Errorf("runs show lacks %q:\n%s", want, shown.stdout)
		}
	}

	r = f.mustSucceed("submit", "--from-run", "adv/"+run, "--right-size", "--dry-run")
	for _, want := range []string{"--right-size: worker memory 8Gi -> 1536Mi\n", "--right-size: worker cpu 4 -> 600m\n"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("submit --right-size stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, want := range []string{"requests:\n                cpu: 600m\n                memory: 1536Mi", "limits:\n                cpu: 600m\n                memory: 1536Mi"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("submit --right-size --dry-run printed:\n%s\nwant %q", r.stdout, want)
		}
	}
}

// storeUsage writes a replica's usage record of job's run, as its agent would.
func (f *fixture) storeUsage(job, run, replica string, u *storage.Usage) {
	f.t.Helper()
	data, err := storage.Marshal(u)
	if err != nil {
		f.t.Fatal(err)
	}
	key := storage.RunPrefix(storage.URI{Bucket: f.srv.Bucket, Key: "runs/"}, f.ns, job, run).Join(replica + "/").Join(storage.UsageName)
	if err := f.srv.Client(f.t).PutObject(context.Background(), key, strings.NewReader(string(data)), int64(len(data)), storage.UploadOptions{}); err != nil {
		f.t.Fatal(err)
	}
}
