package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRunsOutliveTheirJobs: every submission of a job is a run, listed and shown from
// S3 whether or not its TFJob exists; a same-name re-submission is a second run with
// its own attempts; files stored before runs show as run "-".
func TestRunsOutliveTheirJobs(t *testing.T) {
	f := newFixture(t)
	manifest := filepath.Join(t.TempDir(), "tfjob.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: tfk8s.io/v1alpha1
kind: TFJob
metadata:
  name: mnist
  labels: {team: vision}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf:2.21
            command: [python3, train.py]
`), 0o644); err != nil {
		t.Fatal(err)
	}

	// A job without code keeps its run: its record, then its attempts.
	f.mustSucceed("submit", "-f", manifest)
	first := f.getJob("mnist")
	firstRun := tfjob.RunID(string(first.UID))
	start := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	end := start.Add(10 * time.Minute)
	f.storeReplica("mnist", "worker-0").
		attempt(storage.Attempt{Number: 1, Pod: "mnist-worker-0", Start: start, End: &end, ExitCode: ptr.To(137), Reason: "Signaled"}, "first run\n").
		artifact("/workspace/model/ckpt-1", "weights").
		manifest()
	r := f.mustSucceed("runs")
	assertLines(t, r.stdout, `^NAME\s+RUN\s+STATE\s+STARTED\s+DURATION\s+IMAGE\s+REPLICAS\s+LOSS$`,
		`^mnist\s+`+firstRun+`\s+\S+\s+.* ago\s+\S+\s+tf:2.21\s+worker:1\s+-$`)
	f.storeReplica("mnist", "worker-0").putProgress(&tfevents.Progress{Step: 40, Updated: end,
		Scalars: map[string]tfevents.Last{"train/epoch_loss": {Step: 4, Value: 0.125}, "train/epoch_accuracy": {Step: 4, Value: 0.75}}})
	r = f.mustSucceed("runs")
	assertLines(t, r.stdout, `^NAME\s+RUN`, `^mnist\s+`+firstRun+`\s+.*\s+worker:1\s+0.125$`)

	// Deleted as a TFJob, it is still listed and shown, with its attempts.
	f.mustSucceed("delete", "mnist", "--wait")
	r = f.mustSucceed("runs")
	assertLines(t, r.stdout, `^NAME\s+RUN`, `^mnist\s+`+firstRun+`\s+Deleted\s`) // delete wrote its end
	r = f.mustSucceed("runs", "show", "mnist")
	for _, want := range []string{
		`(?m)^Run:\s+` + firstRun + `$`,
		`(?m)^UID:\s+` + string(first.UID) + `$`,
		`(?m)^\s+team: vision$`,
		`(?m)^\s+worker-0\s+1\s+mnist-worker-0\s+.*\s137\s+Signaled$`,
		`(?m)^\s+worker-0\s+\S*/workspace/model/ckpt-1\s+7$`,
		`(?m)^Progress:\n\s+Step:\s+40 \(from worker-0's summaries\)\n\s+Loss:\s+0.125 \(train/epoch_loss at step 4\)\n\s+Updated:\s+.* ago\n`,
		`(?m)^\s+train/epoch_accuracy\s+4\s+0.75$`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("runs show mnist lacks %s:\n%s", want, r.stdout)
		}
	}
	if r = f.mustSucceed("logs", "mnist", "worker-0"); !strings.Contains(r.stdout, "first run") {
		t.Errorf("logs of the deleted job's run: %s", r)
	}

	// Submitted again under the same name: a second run, with attempts of its own.
	f.mustSucceed("submit", "-f", manifest)
	secondRun := tfjob.RunID(string(f.getJob("mnist").UID))
	f.storeReplica("mnist", "worker-0").
		attempt(storage.Attempt{Number: 1, Pod: "mnist-worker-0", Start: time.Now().UTC().Truncate(time.Second)}, "second run\n").
		manifest()
	r = f.mustSucceed("runs")
	for _, want := range []string{`(?m)^mnist\s+` + firstRun + `\s+Deleted\s`, `(?m)^mnist\s+` + secondRun + `\s+(Created|Running)\s`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("runs lacks %s:\n%s", want, r.stdout)
		}
	}
	if r = f.mustSucceed("logs", "mnist", "worker-0"); !strings.Contains(r.stdout, "second run") || strings.Contains(r.stdout, "first run") {
		t.Errorf("logs of the second run: %s", r)
	}
	r = f.mustSucceed("runs", "show", "mnist/"+firstRun)
	if !strings.Contains(r.stdout, "/workspace/model/ckpt-1") {
		t.Errorf("runs show mnist/%s:\n%s", firstRun, r.stdout)
	}

	// Files stored before runs: run "-" of their job.
	f.storeReplica("old", "worker-0").attempt(storage.Attempt{Number: 1, Start: start}, "old\n").manifest()
	r = f.mustSucceed("runs", "-o", "json")
	var list struct {
		Items []struct {
			Name, Run, State string
			Live             bool
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("runs -o json: %v\n%s", err, r.stdout)
	}
	got := map[string]bool{}
	for _, it := range list.Items {
		got[it.Name+"/"+it.Run] = it.Live
	}
	if live, ok := got["mnist/"+secondRun]; len(got) != 3 || !ok || !live || got["mnist/"+firstRun] || !hasKey(got, "old/-") {
		t.Errorf("runs -o json: %v, want mnist/%s (live), mnist/%s and old/-", got, secondRun, firstRun)
	}

	// The selector reads the recorded labels; --since the start.
	r = f.mustSucceed("runs", "-l", "team=vision")
	if strings.Contains(r.stdout, "old") || strings.Count(r.stdout, "mnist") != 2 {
		t.Errorf("runs -l team=vision:\n%s", r.stdout)
	}
	r = f.mustSucceed("runs", "--since", "10m")
	if !strings.Contains(r.stdout, secondRun) {
		t.Errorf("runs --since 10m:\n%s", r.stdout)
	}

	// submit --from-run submits the run's job again; the flags override it.
	f.mustSucceed("submit", "--from-run", "mnist/"+firstRun, "--name", "again", "--workers", "2")
	again := f.getJob("again")
	if again.Labels["team"] != "vision" || again.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Image != "tf:2.21" ||
		*again.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Replicas != 2 || again.Spec.Storage == nil || again.Spec.Storage.SecretRef.Name != "again-storage" {
		t.Errorf("submit --from-run: labels %v, spec %+v", again.Labels, again.Spec)
	}

	// runs delete: refused while the TFJob exists, asks first, then deletes.
	if r = f.tfk8s("runs", "delete", "mnist"); r.code == 0 || !strings.Contains(r.stderr, "its tfjob mnist exists") {
		t.Errorf("runs delete of a live run: %s", r)
	}
	if r = f.mustSucceed("runs", "delete", "mnist/"+firstRun); !strings.Contains(r.stdout, "[y/N]") || !strings.Contains(r.stdout, "Not deleted.") {
		t.Errorf("runs delete without a yes: %s", r)
	}
	f.mustSucceed("runs", "delete", "mnist/"+firstRun, "--yes")
	if r = f.mustSucceed("runs"); strings.Contains(r.stdout, firstRun) || !strings.Contains(r.stdout, secondRun) {
		t.Errorf("runs after deleting mnist/%s:\n%s", firstRun, r.stdout)
	}
	f.mustSucceed("runs", "delete", "old/-", "--yes")
	if r = f.mustSucceed("runs"); regexp.MustCompile(`(?m)^old\s`).MatchString(r.stdout) || !strings.Contains(r.stdout, secondRun) {
		t.Errorf("runs after deleting old/-:\n%s", r.stdout)
	}
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}

// TestSubmitWithoutCodeKeepsItsLogs: with S3 settings known, a job of an image and a
// command alone gets a destination, so an agent that keeps each attempt's log, and its
// run record (issue 27's repro lost a retried replica's first attempt).
func TestSubmitWithoutCodeKeepsItsLogs(t *testing.T) {
	f := newFixture(t)
	f.mustSucceed("submit", "--name", "rtry", "--image", "tf", "--workers", "1", "--restart-policy", "ExitCode", "--backoff-limit", "1", "--", "sh", "-c", "exit 137")
	job := f.getJob("rtry")
	if job.Spec.Artifacts == nil || job.Spec.Storage == nil {
		t.Fatalf("spec.artifacts %+v, spec.storage %+v: want both, for the agent", job.Spec.Artifacts, job.Spec.Storage)
	}
	if objs, recorded := f.withoutRunRecord(f.objectsUnder(""), "rtry"); !recorded || len(objs) != 0 {
		t.Errorf("objects %v (run record found: %v), want the run record alone", objs, recorded)
	}
	if got := f.secrets(); !slices.Equal(got, []string{"rtry-storage"}) {
		t.Errorf("secrets %v, want rtry-storage", got)
	}
	r := f.mustSucceed("describe", "rtry")
	if !regexp.MustCompile(`(?m)^Logs:\s+s3://` + f.srv.Bucket + `/runs/` + f.ns + `/rtry/[0-9a-f]{8}/`).MatchString(r.stdout) {
		t.Errorf("describe:\n%s", r.stdout)
	}
}

// withoutRunRecord returns objs without the run record of job as it exists, and
// whether it was there.
func (f *fixture) withoutRunRecord(objs []storage.Object, job string) ([]storage.Object, bool) {
	f.t.Helper()
	record := jobs.ArtifactsBase(f.getJob(job)).Join(storage.RunRecordName)
	rest := slices.DeleteFunc(slices.Clone(objs), func(o storage.Object) bool { return o.URI == record })
	return rest, len(rest) < len(objs)
}
