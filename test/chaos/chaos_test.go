// Package chaos runs many training jobs on a local cluster while tfk8s and the cluster
// around it are knocked over: the controller SIGKILLed every two seconds, the API server
// killed and restarted, the S3 server down for a while. It checks what a user relies
// on: every job ends as its program says, no replica that succeeded runs twice, no
// condition is taken back, no checkpoint is lost, and nothing is left once the jobs are
// deleted.
//
// `make chaos` runs the full suite three times; `make test` runs a short one. The size
// comes from the environment: TFK8S_CHAOS_JOBS (default 8), TFK8S_CHAOS_SECONDS of
// controller kills (default 20) and TFK8S_CHAOS_S3_OUTAGE seconds (default 10).
package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// plan is the size of a run.
type plan struct {
	jobs     int
	kills    time.Duration // how long the controller is killed every killEvery
	s3Outage time.Duration
	steps    int // seconds each worker trains: longer than both disruptions together
}

const killEvery = 2 * time.Second

// planFromEnv reads the run's size from the environment.
func planFromEnv(t *testing.T) plan {
	num := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive whole number", name, v)
		}
		return n
	}
	p := plan{
		jobs:     num("TFK8S_CHAOS_JOBS", 8),
		kills:    time.Duration(num("TFK8S_CHAOS_SECONDS", 20)) * time.Second,
		s3Outage: time.Duration(num("TFK8S_CHAOS_S3_OUTAGE", 10)) * time.Second,
	}
	p.steps = int((p.kills + p.s3Outage).Seconds()) + 20
	return p
}

// The modes of the jobs' worker 0, which decides a job without a chief; job i runs
// modes[i%4]. Worker 1 and the parameter server run as in ok.
var modes = []string{"ok", "ok", "retry", "fail"}

// wantState is how a job of a mode ends.
func wantState(mode string) tfv1.JobState {
	if mode == "fail" {
		return tfv1.JobFailed
	}
	return tfv1.JobSucceeded
}

// trainScript is every replica's program. A worker writes a checkpoint a second into
// ckpt/, an artifact path, and resumes from the checkpoints restored into it; in mode
// retry worker 0 is killed (137) on its first attempt, after leaving a marker, so its
// second attempt must find the marker and its checkpoints restored; in mode fail it
// exits 1, which no retry cures. The parameter server runs until it is recycled.
const trainScript = `#!/bin/sh
mode=$1 steps=$2
case "$TFK8S_REPLICA" in ps-*) exec sleep 3600 ;; esac
mkdir -p ckpt
if [ "$TFK8S_REPLICA" = worker-0 ]; then
	case "$mode" in
	fail) echo "worker-0: failing for good"; exit 1 ;;
	retry) if [ ! -f ckpt/failed-once ]; then date > ckpt/failed-once; echo "worker-0: killed on the first attempt"; exit 137; fi ;;
	esac
fi
i=$(ls ckpt | grep -c '^step-')
echo "$TFK8S_REPLICA: resuming after step $i"
while [ "$i" -lt "$steps" ]; do
	i=$((i + 1))
	echo "$i" > ckpt/step-$i
	sleep 1
done
echo "$TFK8S_REPLICA: trained $steps steps"
`

// TestMain quiets controller-runtime, whose cache the recorder uses: its retries while
// the API server is down are expected, and the test says what it saw.
func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

func TestChaos(t *testing.T) {
	p := planFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute+3*(p.kills+p.s3Outage))
	defer cancel()
	c := upCluster(ctx, t)
	rec := c.record(ctx, t)

	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "train.sh"), []byte(trainScript), 0o755); err != nil {
		t.Fatal(err)
	}
	jobs := map[string]string{} // name → mode
	for i := range p.jobs {
		name, mode := fmt.Sprintf("chaos-%02d", i), modes[i%len(modes)]
		jobs[name] = mode
		c.mustTfk8s(ctx, t, "submit", code, "--name", name, "--image", images.Python, "--ps", "1", "--workers", "2",
			"--artifacts", "ckpt", "--", "sh", "train.sh", mode, strconv.Itoa(p.steps))
	}
	t.Logf("%d jobs submitted, %d steps each", p.jobs, p.steps)

	kills := c.killController(ctx, t, p.kills)
	c.stopS3For(ctx, t, p.s3Outage)

	waitTerminal(ctx, t, rec, jobs)
	f := figures{jobs: p.jobs, kills: kills, s3Outage: p.s3Outage}
	f.pods, f.duplicates = checkNoReplicaRanTwice(t, rec)
	f.backwards = checkConditionsNeverBackwards(t, rec)
	f.lost = c.checkCheckpoints(ctx, t, rec, jobs, p.steps)
	f.orphans = c.deleteAndCheckNothingLeft(ctx, t, jobs)
	f.unrecorded = c.checkEnds(ctx, t, rec, jobs)
	t.Log(f)
	fmt.Println(f)
}

// figures are what a run prints last.
type figures struct {
	jobs, kills                                int
	s3Outage                                   time.Duration
	pods, duplicates, backwards, lost, orphans int
	unrecorded                                 int
}

func (f figures) String() string {
	return fmt.Sprintf("chaos: %d jobs, %d controller kills, 1 API server restart, S3 down %v; %d pods, %d duplicates, %d conditions taken back, %d checkpoints lost, %d orphans, %d run ends not recorded",
		f.jobs, f.kills, f.s3Outage, f.pods, f.duplicates, f.backwards, f.lost, f.orphans, f.unrecorded)
}

// killController SIGKILLs the controller killEvery after each time it is ready again,
// for d, as a crash-looping controller would be; half-way it kills the API server with
// it. It returns how many times it killed the controller.
func (c *cluster) killController(ctx context.Context, t *testing.T, d time.Duration) int {
	t.Helper()
	start := time.Now()
	kills, apiserverKilled := 0, false
	for time.Since(start) < d {
		select {
		case <-ctx.Done():
			t.Fatalf("killing the controller: %v", ctx.Err())
		case <-time.After(killEvery):
		}
		c.kill(t, "tfk8s-controller", syscall.SIGKILL)
		kills++
		if !apiserverKilled && time.Since(start) >= d/2 {
			c.kill(t, "kube-apiserver", syscall.SIGKILL)
			apiserverKilled = true
			t.Logf("API server killed at %v", time.Since(start).Round(time.Second))
		}
		c.up(ctx, t)
	}
	t.Logf("controller killed %d times in %v", kills, time.Since(start).Round(time.Second))
	return kills
}

// stopS3For kills the S3 server, leaves it down for d while the jobs train and back
// up, and starts it again.
func (c *cluster) stopS3For(ctx context.Context, t *testing.T, d time.Duration) {
	t.Helper()
	c.kill(t, "versitygw", syscall.SIGKILL)
	t.Logf("S3 down for %v", d)
	select {
	case <-ctx.Done():
		t.Fatalf("S3 outage: %v", ctx.Err())
	case <-time.After(d):
	}
	c.up(ctx, t)
}

// waitTerminal waits until every job has succeeded or failed, and checks each ended
// as its mode says.
func waitTerminal(ctx context.Context, t *testing.T, rec *recorder, jobs map[string]string) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		for name := range jobs {
			if s := rec.state(name); s != tfv1.JobSucceeded && s != tfv1.JobFailed {
				return false, nil
			}
		}
		return true, nil
	})
	for name, mode := range jobs {
		if got := rec.state(name); got != wantState(mode) {
			t.Errorf("job %s (mode %s) is %q, want %s: %s", name, mode, got, wantState(mode), rec.conditions(name))
		}
	}
	if err != nil {
		t.Fatalf("waiting for every job to end: %v", err)
	}
}

// checkNoReplicaRanTwice checks every replica's pods: at most one pod that did not fail,
// and none created after one that succeeded. It returns the pods seen and the
// duplicates.
func checkNoReplicaRanTwice(t *testing.T, rec *recorder) (pods, duplicates int) {
	t.Helper()
	for key, runs := range rec.replicas() {
		pods += len(runs)
		notFailed, succeededAt := 0, -1
		for i, r := range runs {
			if r.phase != "Failed" {
				notFailed++
			}
			if r.phase == "Succeeded" && succeededAt < 0 {
				succeededAt = i
			}
		}
		if notFailed > 1 || (succeededAt >= 0 && succeededAt < len(runs)-1) {
			duplicates++
			t.Errorf("replica %s ran more than once: %s", key, formatRuns(runs))
		}
	}
	return pods, duplicates
}

// checkConditionsNeverBackwards checks that no job's terminal condition, once True,
// was ever seen otherwise, and that no replica's succeeded count went down.
func checkConditionsNeverBackwards(t *testing.T, rec *recorder) int {
	t.Helper()
	backwards := rec.backwards()
	for _, b := range backwards {
		t.Errorf("taken back: %s", b)
	}
	return len(backwards)
}

// checkCheckpoints checks that worker 0 of every job that succeeded stored every
// checkpoint it wrote, through the controller's crashes and the S3 outage.
func (c *cluster) checkCheckpoints(ctx context.Context, t *testing.T, rec *recorder, jobs map[string]string, steps int) (lost int) {
	t.Helper()
	for name, mode := range jobs {
		if wantState(mode) != tfv1.JobSucceeded {
			continue
		}
		dest, err := storage.ParseURI(rec.destination(name))
		if err != nil {
			t.Errorf("job %s: artifacts destination: %v", name, err)
			continue
		}
		run := storage.RunPrefix(dest, namespace, name, rec.runOf(name))
		ckpt := storage.ArtifactURI(run.Join("worker-0/"), "/workspace/ckpt").Dir()
		objs, err := c.s3.List(ctx, ckpt)
		if err != nil {
			t.Fatalf("listing %s: %v", ckpt, err)
		}
		stored := map[string]bool{}
		for _, o := range objs {
			stored[strings.TrimPrefix(o.URI.Key, ckpt.Key)] = true
		}
		var missing []string
		for i := 1; i <= steps; i++ {
			if !stored[fmt.Sprintf("step-%d", i)] {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		if len(missing) > 0 {
			lost += len(missing)
			t.Errorf("job %s: worker-0's checkpoints %s are not in %s", name, strings.Join(missing, ","), ckpt)
		}
	}
	return lost
}

// checkEnds checks that every job's run, once the job is deleted, has its end.json,
// with the state the job ended in: written by its record pod, or by tfk8s delete when
// the job went first. It returns how many runs have none, or a wrong one.
func (c *cluster) checkEnds(ctx context.Context, t *testing.T, rec *recorder, jobs map[string]string) (unrecorded int) {
	t.Helper()
	for name, mode := range jobs {
		dest, err := storage.ParseURI(rec.destination(name))
		if err != nil {
			t.Errorf("job %s: artifacts destination: %v", name, err)
			continue
		}
		uri := storage.RunPrefix(dest, namespace, name, rec.runOf(name)).Join(storage.RunEndName)
		var buf bytes.Buffer
		var end tfjob.RunEnd
		if _, err := c.s3.Download(ctx, uri, &buf); err != nil {
			unrecorded++
			t.Errorf("job %s: its run's end: %v", name, err)
		} else if err := json.Unmarshal(buf.Bytes(), &end); err != nil || end.State != string(wantState(mode)) {
			unrecorded++
			t.Errorf("job %s: %s says %q (%v), want state %s", name, uri, buf.String(), err, wantState(mode))
		}
	}
	return unrecorded
}

// binDir is where the cluster's binaries are.
func binDir(t *testing.T) string {
	t.Helper()
	dir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"tfk8s-nodeinit", "kubelet", "containerd", "tfk8s-controller", "tfk8s-agent", "versitygw"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("no %s in %s: the chaos suite runs the real cluster (make build tools)", b, dir)
		}
	}
	return dir
}
