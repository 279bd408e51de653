package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/images"
)

// TestJupyterImageConfig: the Jupyter image has the four layers in order and runs
// JupyterLab as jovyan in its home; the TensorFlow image keeps root, / and python3.
func TestJupyterImageConfig(t *testing.T) {
	dir := t.TempDir()
	var layers []*layerFile
	for _, name := range []string{"python", "tensorflow", "jupyter", "cli"} {
		tree := filepath.Join(dir, name)
		makeTree(t, tree, time.Now())
		l, err := writeLayer(tree, filepath.Join(dir, name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	for _, tc := range []struct {
		spec                  imageSpec
		user, workDir, envEnd string
		cmd                   []string
		layers                int
	}{
		{jupyterSpec(layers[0], layers[1], layers[2], layers[3]), "1000:100", "/home/jovyan", "SHELL=/bin/bash",
			[]string{"jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser"}, 4},
		{tensorFlowSpec(layers[0], layers[1]), "", "/", "LANG=C.UTF-8", []string{"python3"}, 2},
	} {
		idx, err := buildImage(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		img, err := idx.Image(m.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.Config
		if c.User != tc.user || c.WorkingDir != tc.workDir || c.Env[len(c.Env)-1] != tc.envEnd || len(cfg.RootFS.DiffIDs) != tc.layers {
			t.Errorf("%s: user %q, dir %q, env %v, %d layers; want %q, %q, ... %s, %d", tc.spec.ref, c.User, c.WorkingDir, c.Env,
				len(cfg.RootFS.DiffIDs), tc.user, tc.workDir, tc.envEnd, tc.layers)
		}
		if diff := cmp.Diff(tc.cmd, c.Cmd); diff != "" {
			t.Errorf("%s command (-want +got):\n%s", tc.spec.ref, diff)
		}
	}
	if ref := jupyterSpec(nil, nil, nil, nil).ref; ref != images.Jupyter {
		t.Errorf("ref %s, want %s", ref, images.Jupyter)
	}
}

// TestAddUser: jovyan is added to the root's passwd (kept as it was otherwise) and owns
// its home, as the image's user needs.
func TestAddUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestAddUser must run as root: chown, as the image build does")
	}
	root, stage := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"passwd": "root:x:0:0:root:/root:/bin/bash\n", "group": "users:x:100:\n"} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := addUser(root, stage); err != nil {
		t.Fatal(err)
	}
	passwd, _ := os.ReadFile(filepath.Join(stage, "etc/passwd"))
	want := "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:100:Jupyter:/home/jovyan:/bin/bash\n"
	if diff := cmp.Diff(want, string(passwd)); diff != "" {
		t.Errorf("passwd (-want +got):\n%s", diff)
	}
	if group, _ := os.ReadFile(filepath.Join(stage, "etc/group")); !strings.HasPrefix(string(group), "users:x:100:") {
		t.Errorf("group %q: want the root's", group)
	}
	st, err := os.Stat(filepath.Join(stage, "home/jovyan"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 1000 || sys.Gid != 100 {
		t.Errorf("home owned by %d:%d, want 1000:100", sys.Uid, sys.Gid)
	}
}
