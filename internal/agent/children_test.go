package agent_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// newBareJob prepares an agent with an artifacts destination and no code or data.
func newBareJob(t *testing.T) *job {
	t.Helper()
	srv := s3server.Start(t)
	j := &job{srv: srv, client: srv.Client(t), dir: t.TempDir()}
	j.env = append(srv.Env(),
		"PATH="+os.Getenv("PATH"),
		tfjob.EnvArtifactsDestination+"=s3://"+srv.Bucket+"/runs",
		tfjob.EnvArtifactsPaths+"="+fmt.Sprintf(`[%q]`, j.path("model")),
		tfjob.EnvArtifactsInterval+"=0",
		tfjob.EnvNamespace+"=team", tfjob.EnvJobName+"=mnist", tfjob.EnvReplica+"=worker-1",
		tfjob.EnvLogDir+"="+j.path("logs"),
	)
	return j
}

// storedLog returns the log of an attempt, as stored.
func (j *job) storedLog(t *testing.T, attempt int) string {
	t.Helper()
	return download(t, j.client, storage.AttemptLogURI(j.replicaURI("/"), attempt, "tensorflow"))
}

// processesWith returns the live processes whose command line contains marker.
func processesWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		stat, err2 := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || err2 != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		if s := string(stat); strings.Contains(s[strings.LastIndexByte(s, ')'):], " Z ") {
			continue // a zombie: exited
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}

func TestRunEndsWhatTheCommandLeftBehind(t *testing.T) {
	j := newBareJob(t)
	tests := []struct {
		name string
		// script is run by sh -c, with $M a marker unique to the test (a sleep's
		// duration) in every process it leaves behind.
		script   string
		wantCode int
		wantLog  []string
	}{
		{
			name:     "background job in the process group",
			script:   `sleep $M & echo main done; exit 0`,
			wantCode: 0,
		},
		{
			name: "child ignoring SIGTERM and holding the output",
			// The main command ends once its child is sleep: it says "child up" just
			// before it becomes it.
			script: `sh -c 'trap "" TERM; echo child up; exec sleep $0' $M &
				while [ "$(cat /proc/$!/comm)" != sleep ] || ! grep -q "child up" "$LOG"; do :; done; echo main done; exit 3`,
			wantCode: 3,
			wantLog:  []string{"child up", "left 1 processes running: sleep", "sending SIGTERM, SIGKILL after 1s", "killing sleep"},
		},
		{
			name:     "daemon in its own session",
			script:   `setsid sh -c 'exec sleep $0' $M & echo main done; exit 5`,
			wantCode: 5,
		},
		{
			name:     "daemon that forked twice",
			script:   `(setsid sh -c 'exec sleep $0' $M &); echo main done; exit 0`,
			wantCode: 0,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			marker := strconv.Itoa(100000 + rand.IntN(800000))
			j.env = append(j.env[:len(j.env):len(j.env)], tfjob.EnvReplica+"=worker-"+strconv.Itoa(i))
			j.stderr = testutil.SyncBuffer{}
			extra := []string{"M=" + marker, "LOG=" + j.path("logs", "tensorflow.log"), tfjob.EnvChildGrace + "=1s"}
			start := time.Now()
			j.start(t, extra, "sh", "-c", tc.script)
			code := j.wait(t, 20*time.Second)
			took := time.Since(start)
			if code != tc.wantCode {
				t.Errorf("agent exited %d, want the command's %d; stderr:\n%s", code, tc.wantCode, j.stderr.String())
			}
			if left := processesWith(marker); len(left) > 0 {
				t.Errorf("processes left running after the agent exited: %v", left)
				for _, p := range left {
					pid, _ := strconv.Atoi(strings.SplitN(p, ":", 2)[0])
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			log := download(t, j.client, storage.AttemptLogURI(storage.URI{Bucket: j.srv.Bucket, Key: "runs/team/mnist/worker-" + strconv.Itoa(i) + "/"}, 1, "tensorflow"))
			for _, want := range append([]string{"main done", fmt.Sprintf("command exited with code %d", tc.wantCode)}, tc.wantLog...) {
				if !strings.Contains(log, want) {
					t.Errorf("stored log lacks %q:\n%s", want, log)
				}
			}
			t.Logf("the agent exited %d in %v", code, took.Round(time.Millisecond))
		})
	}
}

func TestRunReapsOrphans(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "orphans")
	j := &job{dir: dir, env: []string{"PATH=" + os.Getenv("PATH"), tfjob.EnvLogDir + "=" + dir, "PIDS=" + pids}}
	// Each ( ... &) leaves an orphan that writes its pid and exits: the agent, their
	// subreaper, must collect them while the command goes on.
	j.start(t, nil, "sh", "-c", `for i in 1 2 3; do (sh -c 'echo $$ >> "$PIDS"' &); done; exec sleep 60`)
	var orphans []string
	eventually(t, 10*time.Second, "three orphans", func() bool {
		b, _ := os.ReadFile(pids)
		orphans = strings.Fields(string(b))
		return len(orphans) == 3
	})
	eventually(t, 10*time.Second, "the orphans reaped", func() bool {
		for _, pid := range orphans {
			if _, err := os.Stat("/proc/" + pid); err == nil {
				return false // running, or a zombie nobody collected
			}
		}
		return true
	})
	if err := j.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := j.wait(t, 10*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Errorf("agent exited %d, want %d", code, 128+int(syscall.SIGTERM))
	}
}
