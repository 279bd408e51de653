package storage_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

func TestSyncDirNeverStoresATornFile(t *testing.T) {
	srv := s3server.Start(t)
	c := srv.Client(t)
	versions := [][]byte{bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 256<<10), bytes.Repeat([]byte("c"), 256<<10)}
	tests := []struct {
		name string
		// rewrites is how many uploads see the file rewritten under them.
		rewrites int
		// syncs is how many syncs it takes to store it whole: a file that never
		// holds still is stored as last read, and looked at again next time.
		syncs     int
		wantFinal []byte
	}{
		{name: "rewritten during the first upload", rewrites: 1, syncs: 1, wantFinal: versions[1]},
		{name: "rewritten during five uploads", rewrites: 5, syncs: 2, wantFinal: versions[5%len(versions)]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ckpt")
			if err := os.WriteFile(path, versions[0], 0o644); err != nil {
				t.Fatal(err)
			}
			// The hook plays a trainer that rewrites the checkpoint in place while
			// the agent reads it: what is sent mixes two versions.
			seen := 0
			storage.SetUploadReadHook(t, func(p string) {
				if seen++; seen <= tc.rewrites {
					if err := os.WriteFile(p, versions[seen%len(versions)], 0o644); err != nil {
						t.Error(err)
					}
				}
			})
			state := storage.NewSyncState()
			dst := storage.URI{Bucket: srv.Bucket, Key: "runs/" + t.Name() + "/"}
			for range tc.syncs {
				if _, err := c.SyncDir(testContext(t), dir, dst, state); err != nil {
					t.Fatal(err)
				}
				// Whatever is stored, the state records its digest.
				var stored bytes.Buffer
				if _, err := c.Download(testContext(t), dst.Join("ckpt"), &stored); err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(stored.Bytes())
				if got, _ := state.Get(path); got.SHA256 != hex.EncodeToString(sum[:]) {
					t.Errorf("state records sha256 %s, the stored bytes have %x", got.SHA256, sum)
				}
				if bytes.Equal(stored.Bytes(), tc.wantFinal) {
					t.Logf("stored whole after %d uploads", seen)
					return
				}
			}
			t.Errorf("not stored whole after %d syncs (%d uploads)", tc.syncs, seen)
		})
	}
}
