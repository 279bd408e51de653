package agent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// storeDataSet stores files as tfk8s submit does: under datasets/sha256-<digest>/ with
// the set's manifest beside it. It returns the prefix.
func storeDataSet(t *testing.T, j *job, files map[string]string) storage.URI {
	t.Helper()
	ctx := testContext(t)
	var list []storage.DataFile
	for name, content := range files {
		sum := sha256.Sum256([]byte(content))
		list = append(list, storage.DataFile{Path: name, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
	}
	m := storage.DataManifest{Digest: storage.DataSetDigest(list), Files: list}
	prefix := storage.URI{Bucket: j.srv.Bucket, Key: "datasets/sha256-" + m.Digest + "/"}
	for name, content := range files {
		putObject(t, j, prefix.Join(name), content)
	}
	marker, ok := storage.DataManifestURI(prefix)
	if !ok {
		t.Fatalf("%s has no manifest URI", prefix)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	putObject(t, j, marker, string(b))
	_ = ctx
	return prefix
}

// putObject stores content at u.
func putObject(t *testing.T, j *job, u storage.URI, content string) {
	t.Helper()
	if err := j.client.PutObject(testContext(t), u, strings.NewReader(content), int64(len(content)), storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRunVerifiesDataSets(t *testing.T) {
	j := newJob(t)
	good := storeDataSet(t, j, map[string]string{"train/part-0.csv": "1,2,3\n", "test/part-0.csv": "4,5,6\n"})
	tampered := storeDataSet(t, j, map[string]string{"train/part-0.csv": "7,8,9\n", "labels.txt": "cat dog\n"})
	putObject(t, j, tampered.Join("labels.txt"), "cat cow\n") // changed after the manifest

	tests := []struct {
		name     string
		source   storage.URI
		wantCode int
		wantLog  string
	}{
		{name: "set stored by submit", source: good, wantCode: 0, wantLog: "verified: 2 files match its manifest, digest " + strings.TrimPrefix(filepath.Base(good.Key), "sha256-")},
		{name: "set changed since", source: tampered, wantCode: agent.ExitDigestMismatch, wantLog: "file labels.txt has 8 bytes, SHA-256 "},
		{name: "prefix of the user's", source: storage.URI{Bucket: j.srv.Bucket, Key: "datasets/toy/"}, wantCode: 0, wantLog: "unverified: not a data set stored by tfk8s submit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j.stderr = testutil.SyncBuffer{}
			data := fmt.Sprintf(`%s=[{"source": %q, "path": %q}]`, tfjob.EnvData, tc.source.String(), filepath.Join(t.TempDir(), "data"))
			if code := j.run(t, []string{data}, "true"); code != tc.wantCode {
				t.Errorf("agent exited %d, want %d; stderr:\n%s", code, tc.wantCode, j.stderr.String())
			}
			if !strings.Contains(j.stderr.String(), tc.wantLog) {
				t.Errorf("agent log lacks %q:\n%s", tc.wantLog, j.stderr.String())
			}
		})
	}
}
