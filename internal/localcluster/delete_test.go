package localcluster

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// writeTree creates files (relative path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		testutil.WriteFile(t, filepath.Join(dir, name), content)
	}
}

// TestCheckStateDir: only a directory holding a local cluster's cluster.yaml may be
// deleted; /, the home directory and what holds it never, whatever the link that
// names them; each refusal names the path and why.
func TestCheckStateDir(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home", "ann")
	writeTree(t, root, map[string]string{
		"home/ann/.tfk8s/local/cluster.yaml": "nodeName: tfk8s-node\npodCIDR: 10.244.0.0/24\n",
		"home/ann/.bashrc":                   "",
		"home/ann/project/cluster.yaml":      "apiVersion: kind.x-k8s.io/v1alpha4\nkind: Cluster\n",
		"home/ann/notes/todo.txt":            "",
		"file":                               "",
	})
	if err := os.Symlink(home, filepath.Join(root, "to-home")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".tfk8s", "local"), filepath.Join(root, "to-state")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		dir      string
		wantReal string
		wantErr  string
	}{
		{name: "a state directory", dir: filepath.Join(home, ".tfk8s", "local"), wantReal: filepath.Join(home, ".tfk8s", "local")},
		{name: "a link to a state directory", dir: filepath.Join(root, "to-state"), wantReal: filepath.Join(home, ".tfk8s", "local")},
		{name: "the root directory", dir: "/", wantErr: "refusing to delete / (--dir): it is the root directory"},
		{name: "the home directory", dir: home, wantErr: "refusing to delete " + home + " (--dir): it is the home directory"},
		{name: "a link to the home directory", dir: filepath.Join(root, "to-home"), wantErr: "(--dir): it is the home directory"},
		{name: "above the home directory", dir: filepath.Join(root, "home"), wantErr: "(--dir): it holds the home directory " + home},
		{name: "no cluster.yaml", dir: filepath.Join(home, "notes"), wantErr: "refusing to delete " + filepath.Join(home, "notes") + " (--dir): it holds no cluster.yaml"},
		{name: "another tool's cluster.yaml", dir: filepath.Join(home, "project"), wantErr: "(--dir): its cluster.yaml is not a local cluster's settings"},
		{name: "a file", dir: filepath.Join(root, "file"), wantErr: "(--dir): it is not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			real, err := checkStateDir(tc.dir, home)
			if tc.wantErr == "" {
				if err != nil || real != tc.wantReal {
					t.Errorf("checkStateDir(%s) = %q, %v; want %q", tc.dir, real, err, tc.wantReal)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("checkStateDir(%s) = %q, %v; want an error containing %q", tc.dir, real, err, tc.wantErr)
			}
		})
	}
	if _, err := checkStateDir(filepath.Join(root, "missing"), home); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("checkStateDir of a missing directory: %v, want fs.ErrNotExist", err)
	}
}

// TestDeleteRefusesBeforeStopping: a refused directory is left as it was, and a
// missing one is nothing to delete; neither needs root, since nothing is stopped.
func TestDeleteRefusesBeforeStopping(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"notes.txt": "mine"})
	_, err := Delete(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "refusing to delete "+dir+" (--dir): it holds no cluster.yaml") {
		t.Errorf("Delete of a directory without cluster.yaml: %v, want a refusal naming it", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(data) != "mine" {
		t.Errorf("after the refusal, notes.txt = %q, %v; want it kept", data, err)
	}

	missing := filepath.Join(t.TempDir(), "local")
	d, err := Delete(context.Background(), Options{Dir: missing})
	if err != nil {
		t.Fatalf("Delete of a missing directory: %v", err)
	}
	var out bytes.Buffer
	d.Print(&out)
	if want := "No local cluster in " + missing + ": nothing to delete.\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
}

// TestRemoveStateDir: every entry goes and is named with the bytes it held; the
// directory goes too, unless it was reached through a link, which stays with the
// empty directory it names.
func TestRemoveStateDir(t *testing.T) {
	files := map[string]string{
		"cluster.yaml":              "nodeName: n\n",
		"s3.yaml":                   "endpoint: 10.244.0.1:7070\n",
		"cluster/etcd/member/wal/0": strings.Repeat("w", 1000),
		"s3/tfk8s/code/a.tar.gz":    strings.Repeat("c", 500),
	}
	wantEntries := []string{"cluster", "cluster.yaml", "s3", "s3.yaml"}
	const wantBytes = 12 + 26 + 1000 + 500

	dir := filepath.Join(t.TempDir(), "local")
	writeTree(t, dir, files)
	d, err := removeStateDir(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Deleted{Dir: dir, Entries: wantEntries, Bytes: wantBytes}, d); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state directory is still there: %v", err)
	}
	var out bytes.Buffer
	d.Print(&out)
	if want := "Deleted the local cluster in " + dir + ": removed cluster, cluster.yaml, s3, s3.yaml (1.5 KiB).\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("printed %q, want it to start with %q", out.String(), want)
	}

	target := filepath.Join(t.TempDir(), "big-disk")
	writeTree(t, target, files)
	link := filepath.Join(t.TempDir(), "local")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := removeStateDir(link, target); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(link)
	if err != nil || len(left) != 0 {
		t.Errorf("through the link, %s holds %v (%v); want it there and empty", link, left, err)
	}
}
