package storage_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

// testContext bounds each test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// writeFiles creates files (relative path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readFiles returns the regular files under dir, by slash-separated relative path.
func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUploadDownloadRoundTrip(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx := testContext(t)

	content := bytes.Repeat([]byte("tfk8s round trip\n"), 100_000) // 1.7 MB
	local := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(local, content, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := storage.URI{Bucket: srv.Bucket, Key: "runs/model.bin"}

	if ok, err := c.Exists(ctx, dst); err != nil || ok {
		t.Fatalf("Exists before upload = %v, %v; want false, nil", ok, err)
	}
	var lastDone, lastTotal int64
	err := c.UploadFile(ctx, local, dst, storage.UploadOptions{Progress: func(done, total int64) { lastDone, lastTotal = done, total }})
	if err != nil {
		t.Fatal(err)
	}
	if lastDone != int64(len(content)) || lastTotal != int64(len(content)) {
		t.Errorf("last progress = %d/%d, want %d/%d", lastDone, lastTotal, len(content), len(content))
	}
	if ok, err := c.Exists(ctx, dst); err != nil || !ok {
		t.Fatalf("Exists after upload = %v, %v; want true, nil", ok, err)
	}

	var buf bytes.Buffer
	if _, err := c.Download(ctx, dst, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), content) {
		t.Errorf("Download returned %d bytes, not the %d uploaded", buf.Len(), len(content))
	}
	copyPath := filepath.Join(t.TempDir(), "copy.bin")
	if err := c.DownloadFile(ctx, dst, copyPath); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(copyPath); !bytes.Equal(got, content) {
		t.Errorf("DownloadFile wrote %d bytes, not the %d uploaded", len(got), len(content))
	}

	small := storage.URI{Bucket: srv.Bucket, Key: "runs/small.txt"}
	if err := c.PutObject(ctx, small, strings.NewReader("hello"), 5, storage.UploadOptions{SHA256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.Stat(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Size != 5 || obj.SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" {
		t.Errorf("Stat = %+v, want size 5 and the SHA-256 given at upload", obj)
	}

	objs, err := c.List(ctx, storage.URI{Bucket: srv.Bucket, Key: "runs/"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.URI.Key)
		if o.ModTime.IsZero() {
			t.Errorf("List: %s has no modification time", o.URI)
		}
	}
	if diff := cmp.Diff([]string{"runs/model.bin", "runs/small.txt"}, keys); diff != "" {
		t.Errorf("List keys (-want +got):\n%s", diff)
	}
}

func TestDownloadMissingObject(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	var buf bytes.Buffer
	_, err := c.Download(testContext(t), storage.URI{Bucket: srv.Bucket, Key: "absent"}, &buf)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Download of a missing key: error %v, want one wrapping ErrNotFound", err)
	}
}

func TestSyncDirUploadsOnlyChangedFiles(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx := testContext(t)
	dir := t.TempDir()
	dst := storage.URI{Bucket: srv.Bucket, Key: "runs/job/worker-0/artifacts/model/"}
	state := storage.NewSyncState()
	writeFiles(t, dir, map[string]string{"ckpt-1": "one", "sub/events": "e1", "checkpoint": "ckpt-1"})

	sync := func(step string, wantTransferred int, wantBytes int64) {
		t.Helper()
		stats, err := c.SyncDir(ctx, dir, dst, state)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if stats.Transferred != wantTransferred || stats.Bytes != wantBytes {
			t.Errorf("%s: uploaded %d files, %d bytes; want %d files, %d bytes", step, stats.Transferred, stats.Bytes, wantTransferred, wantBytes)
		}
	}
	sync("first sync", 3, 3+2+6)
	sync("unchanged", 0, 0)

	writeFiles(t, dir, map[string]string{"ckpt-2": "two!", "checkpoint": "ckpt-2"})
	sync("one new, one changed", 2, 4+6)

	// Same content, new modification time: hashed, not uploaded.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "ckpt-1"), later, later); err != nil {
		t.Fatal(err)
	}
	sync("touched", 0, 0)

	// Rewritten with the same size within the same clock tick: size and time are the
	// same, yet the new content must go up.
	ckpt2 := filepath.Join(dir, "ckpt-2")
	st, err := os.Stat(ckpt2)
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"ckpt-2": "TWO!"})
	if err := os.Chtimes(ckpt2, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	sync("rewritten in the same tick", 1, 4)

	// A file deleted locally stays in storage.
	if err := os.Remove(filepath.Join(dir, "ckpt-1")); err != nil {
		t.Fatal(err)
	}
	sync("after a local delete", 0, 0)

	got := map[string]string{}
	for _, key := range []string{"ckpt-1", "ckpt-2", "checkpoint", "sub/events"} {
		var buf bytes.Buffer
		if _, err := c.Download(ctx, dst.Join(key), &buf); err != nil {
			t.Fatal(err)
		}
		got[key] = buf.String()
	}
	want := map[string]string{"ckpt-1": "one", "ckpt-2": "TWO!", "checkpoint": "ckpt-2", "sub/events": "e1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored objects (-want +got):\n%s", diff)
	}

	// A single file maps to the key itself; a missing path is no error.
	single := storage.URI{Bucket: srv.Bucket, Key: "runs/job/worker-0/logs/tensorflow.log"}
	writeFiles(t, dir, map[string]string{"train.log": "log line\n"})
	if stats, err := c.SyncDir(ctx, filepath.Join(dir, "train.log"), single, state); err != nil || stats.Transferred != 1 {
		t.Errorf("SyncDir of a file = %+v, %v; want 1 file uploaded", stats, err)
	}
	if ok, err := c.Exists(ctx, single); err != nil || !ok {
		t.Errorf("Exists(%s) = %v, %v; want true", single, ok, err)
	}
	if stats, err := c.SyncDir(ctx, filepath.Join(dir, "not-yet"), dst, state); err != nil || stats.Files != 0 {
		t.Errorf("SyncDir of a missing path = %+v, %v; want nothing and no error", stats, err)
	}
}

func TestDownloadPrefix(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	ctx := testContext(t)
	src := t.TempDir()
	files := map[string]string{"train/a.csv": "1,2\n", "train/b.csv": "3,4\n", "labels.txt": "cat\ndog\n"}
	writeFiles(t, src, files)
	prefix := storage.URI{Bucket: srv.Bucket, Key: "datasets/pets/"}
	if _, err := c.SyncDir(ctx, src, prefix, storage.NewSyncState()); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	stats, err := c.DownloadPrefix(ctx, prefix, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, readFiles(t, dir)); diff != "" {
		t.Errorf("downloaded files (-want +got):\n%s", diff)
	}
	if stats.Transferred != 3 {
		t.Errorf("first download transferred %d files, want 3", stats.Transferred)
	}
	// Identical files are not fetched again; a changed one is.
	writeFiles(t, dir, map[string]string{"labels.txt": "cow\ndog\n"})
	stats, err = c.DownloadPrefix(ctx, storage.URI{Bucket: srv.Bucket, Key: "datasets/pets"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Transferred != 1 || stats.Files != 3 {
		t.Errorf("second download: %+v, want 1 of 3 files transferred", stats)
	}
	if diff := cmp.Diff(files, readFiles(t, dir)); diff != "" {
		t.Errorf("files after the second download (-want +got):\n%s", diff)
	}

	one := t.TempDir()
	if _, err := c.DownloadPrefix(ctx, storage.URI{Bucket: srv.Bucket, Key: "datasets/pets/labels.txt"}, one); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"labels.txt": files["labels.txt"]}, readFiles(t, one)); diff != "" {
		t.Errorf("single object download (-want +got):\n%s", diff)
	}

	_, err = c.DownloadPrefix(ctx, storage.URI{Bucket: srv.Bucket, Key: "datasets/absent/"}, t.TempDir())
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("DownloadPrefix of an empty prefix: error %v, want one wrapping ErrNotFound", err)
	}
}

func TestRetriesSurviveServerRestart(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t).WithBackoff(storage.Backoff{Initial: 100 * time.Millisecond, Max: time.Second})
	ctx := testContext(t)
	local := filepath.Join(t.TempDir(), "ckpt")
	if err := os.WriteFile(local, []byte("checkpoint during an outage"), 0o644); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	done := make(chan error, 1)
	go func() {
		done <- c.UploadFile(ctx, local, storage.URI{Bucket: srv.Bucket, Key: "ckpt"}, storage.UploadOptions{})
	}()
	select {
	case err := <-done:
		t.Fatalf("upload finished while the server was down: %v", err)
	case <-time.After(2 * time.Second):
	}
	srv.Restart(t)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("upload after the restart: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("upload did not finish after the server came back")
	}
	if ok, err := c.Exists(ctx, storage.URI{Bucket: srv.Bucket, Key: "ckpt"}); err != nil || !ok {
		t.Errorf("Exists after the outage = %v, %v; want true", ok, err)
	}
}

func TestCheckBucketErrors(t *testing.T) {
	srv := s3server.Start(t)
	ctx := testContext(t)

	if err := srv.Client(t).CheckBucket(ctx, srv.Bucket); err != nil {
		t.Errorf("CheckBucket(%s): %v", srv.Bucket, err)
	}
	err := srv.Client(t).CheckBucket(ctx, "no-such-bucket")
	want := "bucket no-such-bucket does not exist at endpoint http://" + srv.Endpoint
	if err == nil || err.Error() != want {
		t.Errorf("CheckBucket of a missing bucket: %v, want %q", err, want)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	cfg := srv.Config()
	cfg.Endpoint = closed
	c, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.CheckBucket(ctx, srv.Bucket)
	if err == nil || !strings.HasPrefix(err.Error(), "S3 endpoint http://"+closed+" unreachable: ") {
		t.Errorf("CheckBucket of a closed port: %v, want it to say the endpoint is unreachable", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("CheckBucket of a closed port took %v", elapsed)
	}
}
