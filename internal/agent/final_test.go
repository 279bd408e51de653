package agent_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRunFinalOnlyWhenTheFinalUploadSucceeds: while the storage cannot take the
// replica's artifacts (a file where their directory must go, in the server's own
// backend), the manifest the agent writes at the end is not Final; once it can, the
// next attempt's is.
func TestRunFinalOnlyWhenTheFinalUploadSucceeds(t *testing.T) {
	j := newBareJob(t)
	replicaDir := filepath.Join(j.srv.Dir, j.srv.Bucket, "runs", "team", "mnist", "worker-1")
	blocker := filepath.Join(replicaDir, "artifacts")
	if err := os.MkdirAll(replicaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := j.path("model")
	write := "mkdir -p " + quote(model) + " && echo weights > " + quote(filepath.Join(model, "ckpt"))
	timeout := []string{tfjob.EnvFinalUploadTimeout + "=3s"}

	if code := j.run(t, timeout, "sh", "-c", write); code != 0 {
		t.Fatalf("agent exited %d, want the command's 0; stderr:\n%s", code, j.stderr.String())
	}
	m := j.manifest(t)
	if code := "none"; m.Final || m.ExitCode == nil || *m.ExitCode != 0 {
		if m.ExitCode != nil {
			code = strconv.Itoa(*m.ExitCode)
		}
		t.Errorf("with the artifacts refused, manifest final=%v exitCode=%s; want final=false, exitCode 0", m.Final, code)
	}
	if !strings.Contains(j.stderr.String(), "final upload incomplete at its deadline") {
		t.Errorf("the agent did not say the final upload was incomplete; stderr:\n%s", j.stderr.String())
	}

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	j.stderr = testutil.SyncBuffer{}
	if code := j.run(t, timeout, "sh", "-c", write); code != 0 {
		t.Fatalf("agent exited %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	m = j.manifest(t)
	if !m.Final || len(m.Attempts) != 2 {
		t.Errorf("with storage back, manifest final=%v with %d attempts; want final=true, 2 attempts", m.Final, len(m.Attempts))
	}
	j.checkStoredModel(t, m)
}
