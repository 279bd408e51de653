package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/minio/minio-go/v7"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// TestArtifactsGetVerifies: artifacts get checks every file it downloads against the
// replica's manifest, and names the file whose object was rewritten after the
// manifest listed it and the one the manifest lists but S3 lost.
func TestArtifactsGetVerifies(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "ckpt", "--image", "tf:2.16", "--artifacts", "model", "--", "python3", "train.py")
	f.waitCondition("ckpt", "Created")
	s := f.storeReplica("ckpt", "worker-0").
		attempt(storage.Attempt{Number: 1, Pod: "ckpt-worker-0"}, "training\n").
		artifact("/workspace/model/ckpt-1.index", "index 1").
		artifact("/workspace/model/ckpt-1.data", "weights 1").
		artifact("/workspace/model/ckpt-2.data", "weights 2")
	s.manifest()

	out := t.TempDir()
	r := f.mustSucceed("artifacts", "get", "ckpt", "-o", out)
	if !strings.Contains(r.stdout, "5 files verified against the replicas' manifests") {
		t.Errorf("artifacts get of intact files: %s", r)
	}

	// ckpt-1.data rewritten behind the manifest's back, ckpt-2.data lost.
	ctx := context.Background()
	data1 := storage.ArtifactURI(s.prefix, "/workspace/model/ckpt-1.data")
	if err := f.srv.Client(t).PutObject(ctx, data1, strings.NewReader("weights X"), 9, storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	data2 := storage.ArtifactURI(s.prefix, "/workspace/model/ckpt-2.data")
	if err := f.srv.MinioClient().RemoveObject(ctx, data2.Bucket, data2.Key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"artifacts", "get", "ckpt", "-o", t.TempDir()},
		{"artifacts", "get", "ckpt", "worker-0/artifacts/workspace/model/", "-o", t.TempDir()},
	} {
		r = f.tfk8s(args...)
		wantErr := "2 of 5 files listed in the manifests are incomplete or mismatched (the job is running"
		if len(args) == 6 {
			wantErr = "2 of 3 files listed"
		}
		if r.code == 0 || !strings.Contains(r.stderr, wantErr) ||
			!strings.Contains(r.stderr, "\nmismatched: worker-0/artifacts/workspace/model/ckpt-1.data: SHA-256 ") ||
			!strings.Contains(r.stderr, "incomplete: worker-0/artifacts/workspace/model/ckpt-2.data: listed in the manifest (9 bytes), not downloaded\n") {
			t.Errorf("%v: want both files named and %q, got %s", args, wantErr, r)
		}
	}
	// One intact file alone verifies.
	out = t.TempDir()
	r = f.mustSucceed("artifacts", "get", "ckpt", "worker-0/artifacts/workspace/model/ckpt-1.index", "-o", out)
	if b, err := os.ReadFile(filepath.Join(out, "ckpt-1.index")); err != nil || string(b) != "index 1" || !strings.Contains(r.stdout, "1 files verified") {
		t.Errorf("artifacts get of one file: %q %v %s", b, err, r)
	}
}

// TestSubmitStoresDataManifest: the marker of an uploaded data set lists every file
// with its size and SHA-256, and the set's digest; a set the digest cache knows but
// whose marker is gone is read again to write it.
func TestSubmitStoresDataManifest(t *testing.T) {
	f := newFixture(t)
	f.digestCache = filepath.Join(t.TempDir(), "digests.json")
	data := writeTree(t, map[string]string{"train/part-0.csv": "1,2\n", "test.csv": "3,4,5\n"})
	// Edited an hour ago: a tree modified a moment ago is never cached.
	hourAgo := time.Now().Add(-time.Hour)
	for _, p := range []string{"train/part-0.csv", "test.csv"} {
		if err := os.Chtimes(filepath.Join(data, p), hourAgo, hourAgo); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(name string) (result, storage.DataManifest) {
		t.Helper()
		r := f.mustSucceed("submit", "--name", name, "--image", "tf:2.16", "--data", data, "--", "python3", "train.py")
		marker, ok := storage.DataManifestURI(storage.MustParseURI(f.getJob(name).Spec.Data[0].Source))
		if !ok {
			t.Fatalf("the data source %s has no marker", f.getJob(name).Spec.Data[0].Source)
		}
		var buf strings.Builder
		if _, err := f.srv.Client(t).Download(context.Background(), marker, &buf); err != nil {
			t.Fatal(err)
		}
		var m storage.DataManifest
		if err := json.Unmarshal([]byte(buf.String()), &m); err != nil {
			t.Fatalf("the marker is no DataManifest: %v\n%s", err, buf.String())
		}
		if !strings.HasSuffix(marker.Key, "/sha256-"+m.Digest+".json") {
			t.Errorf("the marker %s does not carry the digest %s", marker, m.Digest)
		}
		return r, m
	}
	want := []storage.DataFile{{Path: "test.csv", Size: 6}, {Path: "train/part-0.csv", Size: 4}}
	for i := range want {
		sum := sha256.Sum256([]byte(map[string]string{"test.csv": "3,4,5\n", "train/part-0.csv": "1,2\n"}[want[i].Path]))
		want[i].SHA256 = hex.EncodeToString(sum[:])
	}
	r, first := submit("first")
	if !strings.Contains(r.stderr, "data uploaded: ") || first.Bytes != 10 {
		t.Errorf("the first submit: %s", r)
	}
	if diff := cmp.Diff(want, first.Files); diff != "" {
		t.Errorf("the marker's files (-want +got):\n%s", diff)
	}

	// The marker deleted: the digest cache still knows the set, which is read again.
	marker, _ := storage.DataManifestURI(storage.MustParseURI(f.getJob("first").Spec.Data[0].Source))
	if err := f.srv.MinioClient().RemoveObject(context.Background(), marker.Bucket, marker.Key, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	r, second := submit("second")
	if !strings.Contains(r.stderr, "data uploaded: ") || second.Digest != first.Digest {
		t.Errorf("the second submit did not store the marker again: %s", r)
	}
	if diff := cmp.Diff(want, second.Files); diff != "" {
		t.Errorf("the rewritten marker's files (-want +got):\n%s", diff)
	}
	// Stored, and known to the digest cache: nothing uploaded.
	if r, _ := submit("third"); !strings.Contains(r.stderr, "data unchanged, 0 bytes uploaded") {
		t.Errorf("the third submit: %s", r)
	}
}
