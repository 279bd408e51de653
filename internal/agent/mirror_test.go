package agent_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// putMirrored writes an object of the test server, as the agent's uploads do.
func putMirrored(t *testing.T, srv *s3server.Server, key, body string) {
	t.Helper()
	_, err := srv.MinioClient().PutObject(context.Background(), srv.Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatalf("putting %s: %v", key, err)
	}
}

// startMirror runs Mirror from prefix into a fresh directory every 50 ms until the test
// ends; it returns the directory and the mirror's log.
func startMirror(t *testing.T, srv *s3server.Server, prefix string, include ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs")
	logs := &testutil.SyncBuffer{}
	cfg := agent.MirrorConfig{
		Storage: srv.Config(), From: storage.MustParseURI("s3://" + srv.Bucket + "/" + prefix),
		To: dir, Interval: 50 * time.Millisecond, Include: include,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- agent.Mirror(ctx, cfg, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("mirror: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the mirror did not stop within 30 s")
		}
	})
	return dir, logs
}

// waitContent waits until the file holds want.
func waitContent(t *testing.T, path, want string) {
	t.Helper()
	testutil.Eventually(t, path+" to hold "+want, func(context.Context) (bool, error) {
		got, err := os.ReadFile(path)
		return string(got) == want, err
	})
}

// TestMirrorGrownFileAppendedInPlace: an event file that grows in S3 grows in place,
// same inode, and a reader that had it open (TensorBoard's) reads the new bytes.
func TestMirrorGrownFileAppendedInPlace(t *testing.T) {
	srv := s3server.Start(t)
	const key = "runs/ns/job/worker-0/logs/train/events.out.tfevents.1.host.v2"
	putMirrored(t, srv, key, "record-1;")
	dir, logs := startMirror(t, srv, "runs/ns/job/")
	local := filepath.Join(dir, "worker-0/logs/train/events.out.tfevents.1.host.v2")
	waitContent(t, local, "record-1;")
	before, err := os.Stat(local)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := os.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := io.ReadAll(reader); err != nil {
		t.Fatal(err)
	}

	putMirrored(t, srv, key, "record-1;record-2;")
	waitContent(t, local, "record-1;record-2;")
	after, err := os.Stat(local)
	if err != nil {
		t.Fatal(err)
	}
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino {
		t.Errorf("the grown file was replaced (inode %d, then %d), want it appended to in place",
			before.Sys().(*syscall.Stat_t).Ino, after.Sys().(*syscall.Stat_t).Ino)
	}
	tail, err := io.ReadAll(reader)
	if err != nil {
		t.Fatal(err)
	}
	if string(tail) != "record-2;" {
		t.Errorf("the open reader read %q after the growth, want %q", tail, "record-2;")
	}
	testutil.Eventually(t, "the log of the growth", func(context.Context) (bool, error) {
		return strings.Contains(logs.String(), "0 new, 1 grown, 0 replaced files, 9 bytes"), nil
	})
	t.Logf("mirror log:\n%s", logs)
}

// TestMirrorNewReplacedAndFiltered: new files appear, a shrunk one is replaced, keys
// outside the include globs are left alone, and a pass logs what it changed.
func TestMirrorNewReplacedAndFiltered(t *testing.T) {
	srv := s3server.Start(t)
	// The checkpoint's key sorts before the event file's: once the event file is
	// there, the pass has looked at the checkpoint too.
	putMirrored(t, srv, "runs/a/chief-0/model/ckpt-1.index", "weights")
	putMirrored(t, srv, "runs/a/chief-0/train/events.out.tfevents.7", "0123456789")
	dir, logs := startMirror(t, srv, "runs/a/", "*tfevents*", "*.json")
	events := filepath.Join(dir, "chief-0/train/events.out.tfevents.7")
	waitContent(t, events, "0123456789")
	if _, err := os.Stat(filepath.Join(dir, "chief-0/model/ckpt-1.index")); !os.IsNotExist(err) {
		t.Errorf("a key no --include matches was mirrored (stat: %v)", err)
	}
	testutil.Eventually(t, "the pass's log line: one new file", func(context.Context) (bool, error) {
		return strings.Contains(logs.String(), "1 new, 0 grown, 0 replaced files, 10 bytes"), nil
	})

	putMirrored(t, srv, "runs/a/chief-0/train/events.out.tfevents.7", "rewritten")
	putMirrored(t, srv, "runs/a/evaluator-0/summary.json", "{}")
	waitContent(t, events, "rewritten")
	waitContent(t, filepath.Join(dir, "evaluator-0/summary.json"), "{}")
	entries, err := os.ReadDir(filepath.Join(dir, "chief-0/train"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"events.out.tfevents.7"}, names); diff != "" {
		t.Errorf("files beside the replaced one (-want +got):\n%s", diff)
	}
}

// TestMirrorCommandFinalPassOnSIGTERM runs the agent binary as the TensorBoard pod
// does: SIGTERM brings in what was written since the last pass, and exits 0.
func TestMirrorCommandFinalPassOnSIGTERM(t *testing.T) {
	srv := s3server.Start(t)
	putMirrored(t, srv, "runs/c/worker-0/events.out.tfevents.1", "first")
	dir := t.TempDir()
	var stderr testutil.SyncBuffer
	cmd := exec.Command(agentBin, "mirror", "--from", "s3://"+srv.Bucket+"/runs/c/", "--to", dir,
		"--interval", "1h", "--include", "*tfevents*")
	cmd.Env = append(os.Environ(), srv.Env()...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitContent(t, filepath.Join(dir, "worker-0/events.out.tfevents.1"), "first")

	putMirrored(t, srv, "runs/c/worker-0/events.out.tfevents.1", "first+last")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mirror after SIGTERM: %v; stderr:\n%s", err, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(dir, "worker-0/events.out.tfevents.1"))
	if err != nil || !bytes.Equal(got, []byte("first+last")) {
		t.Errorf("after SIGTERM the file holds %q (%v), want the last pass's %q", got, err, "first+last")
	}
	t.Logf("stderr:\n%s", stderr.String())
}

// TestParseMirrorArgs: the flags' errors name the flag.
func TestParseMirrorArgs(t *testing.T) {
	env := map[string]string{tfjob.EnvS3Endpoint: "127.0.0.1:9000"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no from", []string{"--to", "/d"}, "--from is required"},
		{"not a prefix", []string{"--from", "s3://bkt/runs/x", "--to", "/d"}, `--from "s3://bkt/runs/x": want a prefix ending in /`},
		{"no to", []string{"--from", "s3://bkt/runs/"}, "--to is required"},
		{"bad glob", []string{"--from", "s3://bkt/runs/", "--to", "/d", "--include", "[x"}, `--include "[x": syntax error in pattern`},
		{"zero interval", []string{"--from", "s3://bkt/runs/", "--to", "/d", "--interval", "0s"}, "--interval 0s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.ParseMirrorArgs(tc.args, getenv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	cfg, err := agent.ParseMirrorArgs([]string{"--from", "s3://bkt/runs/ns/job/", "--to", "/d", "--include", "*tfevents*", "--include", "*.json"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"*tfevents*", "*.json"}, cfg.Include); diff != "" {
		t.Errorf("include (-want +got):\n%s", diff)
	}
	if cfg.Interval != agent.DefaultMirrorInterval || cfg.Storage.Endpoint != "127.0.0.1:9000" {
		t.Errorf("interval %v endpoint %q, want the default and the environment's", cfg.Interval, cfg.Storage.Endpoint)
	}
}
