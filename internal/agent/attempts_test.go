package agent_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// trainStep is a stand-in trainer that resumes: it prints the checkpoint it starts
// from, writes the next one, and exits $CODE.
const trainStep = `mkdir -p "$MODEL"; echo "starting from: $(cat "$MODEL/checkpoint" 2>/dev/null || echo nothing)";
[ -f "$MODEL/checkpoint" ] && echo "its weights: $(cat "$MODEL/$(cat "$MODEL/checkpoint")")";
echo "weights-$STEP" > "$MODEL/ckpt-$STEP"; echo "ckpt-$STEP" > "$MODEL/checkpoint"; echo "attempt output $STEP"; exit $CODE`

// attemptSummary is what a test compares of an attempt record.
type attemptSummary struct {
	Number   int
	Pod      string
	ExitCode int
	Reason   string
}

func summarize(as []storage.Attempt) []attemptSummary {
	var out []attemptSummary
	for _, a := range as {
		s := attemptSummary{Number: a.Number, Pod: a.Pod, Reason: a.Reason, ExitCode: -1}
		if a.ExitCode != nil {
			s.ExitCode = *a.ExitCode
		}
		if a.End == nil || a.Start.IsZero() || a.End.Before(a.Start) {
			s.Reason += " (bad times)"
		}
		out = append(out, s)
	}
	return out
}

// runStep runs trainStep as the replica's next attempt and checks its exit code.
func (j *job) runStep(t *testing.T, step string, code int, extra ...string) string {
	t.Helper()
	j.stdout, j.stderr = testutil.SyncBuffer{}, testutil.SyncBuffer{}
	env := append([]string{"MODEL=" + j.path("model"), "STEP=" + step, "CODE=" + strconv.Itoa(code)}, extra...)
	if got := j.run(t, env, "sh", "-c", trainStep); got != code {
		t.Fatalf("agent exited %d, want %d; stderr:\n%s", got, code, j.stderr.String())
	}
	return j.stdout.String()
}

func TestRunKeepsEveryAttemptAndResumes(t *testing.T) {
	j := newBareJob(t)

	// Attempt 1 fails after its first checkpoint.
	out := j.runStep(t, "1", 1, tfjob.EnvPodName+"=mnist-worker-1", tfjob.EnvPodUID+"=uid-a")
	if !strings.Contains(out, "starting from: nothing") {
		t.Errorf("attempt 1 output:\n%s", out)
	}

	// The pod is re-created: a new, empty filesystem. Attempt 2 restores the
	// checkpoint and goes on from it; the restored files are not uploaded again.
	if err := os.RemoveAll(j.path("model")); err != nil {
		t.Fatal(err)
	}
	out = j.runStep(t, "2", 0, tfjob.EnvPodName+"=mnist-worker-1", tfjob.EnvPodUID+"=uid-b")
	if !strings.Contains(out, "starting from: ckpt-1") || !strings.Contains(out, "its weights: weights-1") {
		t.Errorf("attempt 2 did not resume from ckpt-1:\n%s", out)
	}
	for _, want := range []string{"attempt 2 of replica worker-1", "restored 2 files (17 bytes)", "uploaded 3 of 4 files"} {
		if !strings.Contains(j.stderr.String(), want) {
			t.Errorf("agent log lacks %q:\n%s", want, j.stderr.String())
		}
	}

	// The container restarts in the same pod: its files survived, and a newer local
	// checkpoint is kept rather than overwritten by the stored one.
	testutil.WriteFile(t, j.path("model", "ckpt-2"), "weights-2, trained on locally\n")
	out = j.runStep(t, "3", 0, tfjob.EnvPodName+"=mnist-worker-1", tfjob.EnvPodUID+"=uid-b")
	if !strings.Contains(out, "its weights: weights-2, trained on locally") {
		t.Errorf("attempt 3 lost the local checkpoint:\n%s", out)
	}
	if want := "restored 0 files (0 bytes)"; !strings.Contains(j.stderr.String(), want) || !strings.Contains(j.stderr.String(), "1 kept as newer locally") {
		t.Errorf("agent log lacks %q and a kept file:\n%s", want, j.stderr.String())
	}

	// Every attempt's log is kept, each with its own output only.
	for n := 1; n <= 3; n++ {
		log := j.storedLog(t, n)
		for other := 1; other <= 3; other++ {
			if line := "attempt output " + strconv.Itoa(other); strings.Contains(log, line) != (other == n) {
				t.Errorf("log of attempt %d: holds %q = %v:\n%s", n, line, other != n, log)
			}
		}
	}
	m := j.manifest(t)
	want := []attemptSummary{
		{Number: 1, Pod: "mnist-worker-1", ExitCode: 1, Reason: agent.ReasonError},
		{Number: 2, Pod: "mnist-worker-1", ExitCode: 0, Reason: agent.ReasonCompleted},
		{Number: 3, Pod: "mnist-worker-1", ExitCode: 0, Reason: agent.ReasonCompleted},
	}
	if diff := cmp.Diff(want, summarize(m.Attempts)); diff != "" {
		t.Errorf("manifest attempts (-want +got):\n%s", diff)
	}
	var record storage.Attempt
	if err := json.Unmarshal([]byte(download(t, j.client, storage.AttemptRecordURI(j.replicaURI("/"), 1))), &record); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:1], summarize([]storage.Attempt{record})); diff != "" || record.PodUID != "uid-a" {
		t.Errorf("record of attempt 1 (-want +got):\n%s (pod UID %q)", diff, record.PodUID)
	}
	j.checkStoredModel(t, m)
	logs := 0
	for _, f := range m.Files {
		if strings.Contains(f.Key, "/attempts/") {
			logs++
		}
	}
	if logs != 3 {
		t.Errorf("manifest lists %d attempt logs, want 3: %+v", logs, m.Files)
	}
}

func TestRunResumesFromAnotherJob(t *testing.T) {
	j := newBareJob(t)
	j.runStep(t, "1", 0)
	if err := os.RemoveAll(j.path("model")); err != nil {
		t.Fatal(err)
	}
	from := tfjob.EnvArtifactsResumeFrom + "=s3://" + j.srv.Bucket + "/runs/team/mnist/"

	// A new job, mnist-v2, starts from mnist's checkpoint.
	out := j.runStep(t, "2", 0, tfjob.EnvJobName+"=mnist-v2", from)
	if !strings.Contains(out, "its weights: weights-1") {
		t.Errorf("mnist-v2 did not resume from mnist's checkpoint:\n%s", out)
	}
	stored := storage.ArtifactURI(storage.URI{Bucket: j.srv.Bucket, Key: "runs/team/mnist-v2/worker-1/"}, j.path("model", "ckpt-1"))
	if got := download(t, j.client, stored); got != "weights-1\n" {
		t.Errorf("mnist-v2 stored %s = %q, want the restored checkpoint", stored, got)
	}

	// A replica the earlier job did not have starts from nothing.
	if err := os.RemoveAll(j.path("model")); err != nil {
		t.Fatal(err)
	}
	out = j.runStep(t, "1", 0, tfjob.EnvJobName+"=mnist-v3", tfjob.EnvReplica+"=worker-9", from)
	if !strings.Contains(out, "starting from: nothing") || !strings.Contains(j.stderr.String(), "nothing to restore: s3://") {
		t.Errorf("worker-9 output:\n%s\nagent log:\n%s", out, j.stderr.String())
	}
}

// TestRunStoresUnderItsRun: with the job's run in its environment, the replica stores
// under <destination>/<namespace>/<job>/<run>/, so a same-name job starts clean.
func TestRunStoresUnderItsRun(t *testing.T) {
	j := newBareJob(t)
	j.runStep(t, "1", 0, tfjob.EnvRun+"=0f3a9c2e")
	dest := storage.MustParseURI("s3://" + j.srv.Bucket + "/runs")
	m, err := storage.ReadManifest(t.Context(), j.client, storage.RunPrefix(dest, "team", "mnist", "0f3a9c2e").Join("worker-1/"))
	if err != nil || !m.Final || len(m.Attempts) != 1 {
		t.Fatalf("the run's manifest: %+v, %v", m, err)
	}
	if found, err := j.client.Any(t.Context(), storage.JobPrefix(dest, "team", "mnist").Join("worker-1/")); found || err != nil {
		t.Errorf("stored without the run level too (found %v, %v)", found, err)
	}
}
