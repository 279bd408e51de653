package agent_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func TestRunBacksUpCheckpointsOnSIGTERM(t *testing.T) {
	j := newJob(t)
	j.start(t, nil, "python3", "train.py", j.path("model"), "1000", "0.3")

	// The periodic upload stores checkpoints while the command runs.
	eventually(t, 30*time.Second, "a checkpoint in S3 while training", func() bool {
		ok, err := j.client.Exists(testContext(t), j.replicaURI("artifacts", strings.TrimPrefix(j.path("model", "ckpt-2"), "/")))
		return err == nil && ok
	})
	if err := j.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := j.wait(t, 30*time.Second); code != 42 {
		t.Fatalf("agent exited %d, want the command's 42; stderr:\n%s", code, j.stderr.String())
	}

	// The checkpoint written on SIGTERM is stored, and the manifest says so last.
	final := j.replicaURI("artifacts", strings.TrimPrefix(j.path("model", "ckpt-final"), "/"))
	if got, want := download(t, j.client, final), "weights of ckpt-final after toy-dataset-v1\n"; got != want {
		t.Errorf("%s = %q, want %q", final, got, want)
	}
	m := j.manifest(t)
	if !m.Final || m.ExitCode == nil || *m.ExitCode != 42 {
		t.Errorf("manifest final = %v, exit code %v; want final with 42", m.Final, m.ExitCode)
	}
	j.checkStoredModel(t, m)

	// The log tells the command's output and what the agent did, locally and in S3.
	stored := download(t, j.client, j.replicaURI("attempts", "1", "logs", "tensorflow.log"))
	for _, want := range []string{"hello from lib data: toy-dataset-v1", "step 2", "received SIGTERM, saved ckpt-final", "forwarding terminated", "command exited with code 42"} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored log lacks %q:\n%s", want, stored)
		}
	}
	if !strings.Contains(j.stdout.String(), "step 2") {
		t.Errorf("agent stdout lacks the command's output:\n%s", j.stdout.String())
	}
	if local, err := os.ReadFile(j.path("logs", "tensorflow.log")); err != nil || !strings.Contains(string(local), "step 2") {
		t.Errorf("local log file: %v\n%s", err, local)
	}
	// The ignored directory was not shipped.
	if _, err := os.Stat(j.path("workspace", "scratch")); !os.IsNotExist(err) {
		t.Errorf("scratch/ was unpacked despite .tfk8signore: %v", err)
	}
}

func TestRunSurvivesStorageOutage(t *testing.T) {
	j := newJob(t)
	// 60 steps of 0.25 s: about 15 s of training, with a 10 s outage in the middle.
	j.start(t, nil, "python3", "train.py", j.path("model"), "60", "0.25")
	eventually(t, 30*time.Second, "the first checkpoint in S3", func() bool {
		ok, err := j.client.Exists(testContext(t), j.replicaURI("artifacts", strings.TrimPrefix(j.path("model", "ckpt-0"), "/")))
		return err == nil && ok
	})
	j.srv.Stop()
	time.Sleep(10 * time.Second)
	select {
	case <-j.done:
		t.Fatalf("the command ended during the outage (exit %d); stderr:\n%s", j.exitCode, j.stderr.String())
	default:
	}
	written, err := os.ReadDir(j.path("model"))
	if err != nil {
		t.Fatal(err)
	}
	j.srv.Restart(t)

	// Files written during the outage are stored once S3 is back, while training goes on.
	lastDuringOutage := j.path("model", written[len(written)-1].Name())
	eventually(t, 20*time.Second, "checkpoints written during the outage in S3", func() bool {
		ok, err := j.client.Exists(testContext(t), j.replicaURI("artifacts", strings.TrimPrefix(lastDuringOutage, "/")))
		return err == nil && ok
	})
	if code := j.wait(t, time.Minute); code != 0 {
		t.Fatalf("agent exited %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	if !strings.Contains(j.stderr.String(), "will retry") {
		t.Errorf("the agent did not report the failed uploads; stderr:\n%s", j.stderr.String())
	}
	m := j.manifest(t)
	j.checkStoredModel(t, m)
	if n := len(localFiles(t, m)); n != 60+2 { // ckpt-0..59, checkpoint, the log
		t.Errorf("manifest lists %d files that exist locally, want 62", n)
	}
}

func TestRunFailsBeforeTheCommand(t *testing.T) {
	j := newJob(t)
	wrong := strings.Repeat("0", 64)
	tests := []struct {
		name     string
		env      []string
		command  []string
		wantCode int
		wantErr  string
	}{
		{
			name:     "wrong digest",
			env:      []string{tfjob.EnvCodeSHA256 + "=" + wrong},
			wantCode: agent.ExitDigestMismatch,
			wantErr:  "has SHA-256 " + j.codeSHA + ", want " + wrong + ": refusing to run it",
		},
		{
			name:     "missing code archive",
			env:      []string{tfjob.EnvCodeSource + "=s3://" + j.srv.Bucket + "/code/team/sha256-" + wrong + ".tar.gz"},
			wantCode: agent.ExitNotFound,
			wantErr:  "fetching code: downloading",
		},
		{
			name:     "missing data",
			env:      []string{tfjob.EnvData + `=[{"source": "s3://` + j.srv.Bucket + `/datasets/absent/", "path": "/tmp/x"}]`},
			wantCode: agent.ExitNotFound,
			wantErr:  "no objects under it",
		},
		{
			name:     "code past the cap on entries",
			env:      []string{tfjob.EnvUnpackMaxEntries + "=1"},
			wantCode: agent.ExitBadArchive,
			wantErr:  "more than 1 entries, the cap on entries: raise it with the agent's --unpack-max-entries, or TFK8S_UNPACK_MAX_ENTRIES",
		},
		{
			name:     "code past the cap on bytes",
			env:      []string{tfjob.EnvUnpackMaxBytes + "=10"},
			wantCode: agent.ExitBadArchive,
			wantErr:  "more than 10 bytes, the cap on unpacked bytes: raise it with the agent's --unpack-max-bytes, or TFK8S_UNPACK_MAX_BYTES",
		},
		{
			name:     "bad configuration",
			env:      []string{tfjob.EnvArtifactsInterval + "=-1s"},
			wantCode: agent.ExitUsage,
			wantErr:  "artifacts interval -1s: must not be negative",
		},
		{
			name:     "command not found",
			command:  []string{"no-such-trainer"},
			wantCode: agent.ExitCommandNotFound,
			wantErr:  `starting "no-such-trainer"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			command := tc.command
			if command == nil {
				command = []string{"python3", "-c", "open(" + quote(marker) + ", 'w')"}
			}
			j.stderr = testutil.SyncBuffer{}
			if code := j.run(t, tc.env, command...); code != tc.wantCode {
				t.Errorf("agent exited %d, want %d; stderr:\n%s", code, tc.wantCode, j.stderr.String())
			}
			if !strings.Contains(j.stderr.String(), tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, j.stderr.String())
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

func TestRunKeepsExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		want    int
	}{
		{name: "success", command: []string{"true"}, want: 0},
		{name: "own code", command: []string{"sh", "-c", "exit 3"}, want: 3},
		{name: "killed by a signal", command: []string{"sh", "-c", "kill -KILL $$"}, want: 128 + 9},
		{name: "not executable", command: []string{"/etc/hostname"}, want: agent.ExitCannotExecute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j := &job{dir: dir, env: []string{"PATH=" + os.Getenv("PATH"), tfjob.EnvLogDir + "=" + dir}}
			if code := j.run(t, nil, tc.command...); code != tc.want {
				t.Errorf("agent exited %d, want %d; stderr:\n%s", code, tc.want, j.stderr.String())
			}
		})
	}
}

func TestInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bin")
	ctx := testContext(t)
	if out, err := exec.CommandContext(ctx, agentBin, "install", dir).CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	installed := filepath.Join(dir, agent.BinaryName)
	st, err := os.Stat(installed)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("installed mode = %v, want 0755", st.Mode().Perm())
	}
	want, _ := os.ReadFile(agentBin)
	got, _ := os.ReadFile(installed)
	if !bytes.Equal(want, got) {
		t.Error("the installed binary differs from the agent")
	}
	run := exec.CommandContext(ctx, installed, "run", "--", "true")
	run.Env = []string{"PATH=" + os.Getenv("PATH"), tfjob.EnvLogDir + "=" + t.TempDir()}
	if out, err := run.CombinedOutput(); err != nil {
		t.Errorf("the installed agent does not run: %v\n%s", err, out)
	}
}

// quote renders s as a Python string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }
