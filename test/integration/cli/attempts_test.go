package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// storedReplica writes into the test's bucket what a replica's agent stores, laid out
// by internal/storage's layout functions: the given files (path under the replica
// prefix → content), each attempt's log and record, and the manifest listing them.
type storedReplica struct {
	f       *fixture
	prefix  storage.URI
	files   map[string]string
	listed  []map[string]any
	records []storage.Attempt
}

// storeReplica starts the stored files of a replica of job, where its agent stores:
// under the job's run if the job exists, else as agents did before runs.
func (f *fixture) storeReplica(job, replica string) *storedReplica {
	dest := storage.URI{Bucket: f.srv.Bucket, Key: "runs/"}
	run := ""
	existing := &tfv1.TFJob{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: job}, existing); err == nil {
		run = tfjob.RunID(string(existing.UID))
	}
	return &storedReplica{f: f, prefix: storage.RunPrefix(dest, f.ns, job, run).Join(replica + "/"), files: map[string]string{}}
}

// put stores an object under the replica's prefix and lists it in the manifest.
func (s *storedReplica) put(u storage.URI, content string) {
	s.f.t.Helper()
	if err := s.f.srv.Client(s.f.t).PutObject(context.Background(), u, strings.NewReader(content), int64(len(content)), storage.UploadOptions{}); err != nil {
		s.f.t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	s.listed = append(s.listed, map[string]any{"path": "/" + u.Key, "key": u.Key, "size": len(content), "sha256": hex.EncodeToString(sum[:])})
}

// attempt stores attempt a with its log.
func (s *storedReplica) attempt(a storage.Attempt, log string) *storedReplica {
	s.f.t.Helper()
	a.Container = "tensorflow"
	s.put(storage.AttemptLogURI(s.prefix, a.Number, "tensorflow"), log)
	record, _ := json.Marshal(a)
	s.put(storage.AttemptRecordURI(s.prefix, a.Number), string(record))
	s.records = append(s.records, a)
	return s
}

// artifact stores an artifact file.
func (s *storedReplica) artifact(path, content string) *storedReplica {
	s.f.t.Helper()
	s.put(storage.ArtifactURI(s.prefix, path), content)
	return s
}

// manifest writes the manifest, last, as the agent does.
func (s *storedReplica) manifest() {
	s.f.t.Helper()
	body, _ := json.Marshal(map[string]any{"files": s.listed, "attempts": s.records})
	u := s.prefix.Join(storage.ManifestName)
	if err := s.f.srv.Client(s.f.t).PutObject(context.Background(), u, strings.NewReader(string(body)), int64(len(body)), storage.UploadOptions{}); err != nil {
		s.f.t.Fatal(err)
	}
}

// TestLogsAndDescribeShowEveryAttempt: a replica that ran twice keeps both logs. logs
// prints the current attempt, --previous the one before (from S3 when the pod's
// previous container cannot be read), --attempt N any; describe lists the attempts.
func TestLogsAndDescribeShowEveryAttempt(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "retried", "--image", "tf:2.16", "--ps", "1", "--artifacts", "model", "--", "python3", "train.py")
	f.waitPods("retried", "retried-ps-0", "retried-worker-0")

	start := time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Second)
	end := start.Add(10 * time.Minute)
	f.storeReplica("retried", "worker-0").
		attempt(storage.Attempt{Number: 1, Pod: "retried-worker-0", PodUID: "uid-1", Start: start, End: &end, ExitCode: ptr.To(137), Reason: "Signaled", Message: "killed by SIGKILL"}, "step 1\nstep 2\nKilled\n").
		attempt(storage.Attempt{Number: 2, Pod: "retried-worker-0", PodUID: "uid-2", Start: end.Add(time.Minute)}, "resumed at step 2\n").
		manifest()
	f.storeReplica("retried", "ps-0").
		attempt(storage.Attempt{Number: 1, Pod: "retried-ps-0", Start: start}, "ps serving\n").
		manifest()

	cases := []struct {
		args       []string
		wantOut    string
		wantErr    string // a non-zero exit with this on stderr
		wantStderr string
	}{
		{args: []string{"logs", "retried", "worker-0"}, wantOut: "[worker-0] resumed at step 2\n"},
		{args: []string{"logs", "retried", "worker-0", "--previous"}, wantOut: "[worker-0] step 1\n[worker-0] step 2\n[worker-0] Killed\n"},
		{args: []string{"logs", "retried", "worker-0", "-p"}, wantOut: "[worker-0] step 1\n[worker-0] step 2\n[worker-0] Killed\n"},
		{args: []string{"logs", "retried", "worker-0", "--attempt", "2"}, wantOut: "[worker-0] resumed at step 2\n"},
		{args: []string{"logs", "retried", "worker-0", "--attempt", "3"}, wantErr: "--attempt 3: replica worker-0 has no attempt 3: S3 holds attempts 1, 2"},
		{args: []string{"logs", "retried", "ps-0", "--previous"}, wantErr: "--previous: replica ps-0 has no attempt before its current one: S3 holds attempts 1"},
		// All replicas: the one without an earlier attempt is a note.
		{args: []string{"logs", "retried", "--attempt", "2"}, wantOut: "[worker-0] resumed at step 2\n", wantStderr: "ps-0: --attempt 2: replica ps-0 has no attempt 2"},
		{args: []string{"logs", "retried", "--attempt", "0"}, wantErr: "--attempt 0: attempts count from 1"},
		{args: []string{"logs", "retried", "-f", "--previous"}, wantErr: "--follow prints the current attempt"},
	}
	for _, tc := range cases {
		r := f.tfk8s(tc.args...)
		switch {
		case tc.wantErr != "" && (r.code == 0 || !strings.Contains(r.stderr, tc.wantErr)):
			t.Errorf("%v: want an error %q, got %s", tc.args, tc.wantErr, r)
		case tc.wantErr == "" && (r.code != 0 || r.stdout != tc.wantOut || !strings.Contains(r.stderr, tc.wantStderr)):
			t.Errorf("%v: want %q (stderr %q), got %s", tc.args, tc.wantOut, tc.wantStderr, r)
		}
	}

	// The pod restarted: --previous asks Kubernetes for the previous container's log
	// first; with no kubelet to serve it, the copy in S3 is printed.
	kubelet().Bind(t, f.ns, "retried-worker-0", "node-a")
	kubelet().SetRestarted(t, f.ns, "retried-worker-0", 1, 137)
	r := f.mustSucceed("logs", "retried", "worker-0", "--previous")
	if r.stdout != "[worker-0] step 1\n[worker-0] step 2\n[worker-0] Killed\n" || !strings.Contains(r.stderr, "worker-0: no live log (") {
		t.Errorf("logs --previous of a restarted pod: %s", r)
	}

	r = f.mustSucceed("describe", "retried")
	attempts := `(?m)^Attempts:\n` +
		`\s+REPLICA\s+ATTEMPT\s+POD\s+STARTED\s+ENDED\s+EXIT CODE\s+REASON\n` +
		`\s+ps-0\s+1\s+retried-ps-0\s+30m ago\s+<running>\s+-\s+<none>\n` +
		`\s+worker-0\s+1\s+retried-worker-0\s+30m ago\s+20m ago\s+137\s+Signaled: killed by SIGKILL\n` +
		`\s+worker-0\s+2\s+retried-worker-0\s+19m ago\s+<running>\s+-\s+<none>\n` +
		`Progress:`
	if !regexp.MustCompile(attempts).MatchString(r.stdout) {
		t.Errorf("describe does not list the attempts as %s:\n%s", attempts, r.stdout)
	}

	// Once the job is gone, every attempt is still there.
	f.mustSucceed("delete", "retried", "--wait")
	r = f.mustSucceed("logs", "retried", "worker-0", "--attempt", "1")
	if !regexp.MustCompile(`(?s)^\[worker-0\] step 1\n.*Killed\n$`).MatchString(r.stdout) {
		t.Errorf("logs --attempt 1 of a deleted job: %s", r)
	}
}
