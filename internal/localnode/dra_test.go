package localnode

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDRADriverArgs: the driver serves this node's claims with the number of devices
// asked for, registers where the kubelet looks for plugins, and writes its CDI specs
// where containerd reads them.
func TestDRADriverArgs(t *testing.T) {
	c := testConfig()
	c.DRAGPUs = 2
	args := draDriverArgs(c)
	if !slices.Contains(args, "kubelet-plugin") {
		t.Errorf("the driver does not run as a kubelet plugin: %v", args)
	}
	containerd, err := renderContainerdConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	cdiDir := argValue(args, "--cdi-dir")
	if cdiDir == "" || !strings.Contains(string(containerd), "cdi_spec_dirs = [\""+cdiDir+"\"]") {
		t.Errorf("the driver writes CDI specs to %q, not where containerd reads them:\n%s", cdiDir, containerd)
	}
	want := map[string]string{
		"--node-name":                c.Name,
		"--num-devices":              "2",
		"--drivername":               DRADriver,
		"--plugin-registration-path": filepath.Join(kubeletRootDir, "plugins_registry"),
	}
	for flag, value := range want {
		if got := argValue(args, flag); got != value {
			t.Errorf("%s = %q, want %q", flag, got, value)
		}
	}
}

// argValue is the value of --flag=value in args, "" if absent.
func argValue(args []string, flag string) string {
	for _, a := range args {
		if value, ok := strings.CutPrefix(a, flag+"="); ok {
			return value
		}
	}
	return ""
}

// TestWriteConfigsForgetsPreparedClaims: a node started again finds no CDI spec of a
// claim prepared before it stopped, and a kubelet that will ask the driver to prepare
// its pods' claims again.
func TestWriteConfigsForgetsPreparedClaims(t *testing.T) {
	c := testConfig()
	c.StateDir = t.TempDir()
	p := pathsOf(c)
	stale := []string{filepath.Join(p.cdiDir, "gpu.tfk8s.io-claim1.json"), filepath.Join(p.kubeletDir, "dra_manager_state")}
	for _, f := range stale {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // a first start, with none of them, too
		if err := writeConfigs(c); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range stale {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after writeConfigs: %v, want it gone", f, err)
		}
	}
	if entries, err := os.ReadDir(p.cdiDir); err != nil || len(entries) != 0 {
		t.Errorf("CDI directory: %d entries, %v; want it there and empty", len(entries), err)
	}
}
