package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoSDK is the Python SDK's package in this repository.
const repoSDK = "../../python/src/tfk8s"

// TestStageSDK: the SDK staged for the Jupyter image imports with the image's layout
// (site-packages beside the CLI's /usr/local/bin/tfk8s, found on PATH), and pip's
// metadata names its version.
func TestStageSDK(t *testing.T) {
	stage := t.TempDir()
	if err := stageSDK(repoSDK, stage); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(stage, "usr/local/bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A stand-in for the CLI: the SDK only has to find it on PATH, not run it.
	if err := os.WriteFile(filepath.Join(bin, "tfk8s"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c",
		"import importlib.metadata, tfk8s; print(tfk8s.Client().binary, importlib.metadata.version('tfk8s') == tfk8s.__version__)")
	cmd.Env = []string{"PYTHONPATH=" + filepath.Join(stage, sitePackages), "PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("import tfk8s from the staged SDK: %v: %s", err, out)
	}
	if want := filepath.Join(bin, "tfk8s") + " True\n"; string(out) != want {
		t.Errorf("the staged SDK printed %q, want %q: the CLI on PATH, and its version in its metadata", out, want)
	}
	if _, err := os.Stat(filepath.Join(stage, sitePackages, "tfk8s/py.typed")); err != nil {
		t.Errorf("py.typed not staged: %v", err)
	}
}

// TestSDKSumChanges: the CLI layer's key changes when a file of the SDK does, and not
// for a cache Python leaves beside it.
func TestSDKSumChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("__init__.py", "x = 1\n")
	first, err := sdkSum(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("__init__.pyc", "cache")
	if again, _ := sdkSum(dir); again != first {
		t.Error("a cache changed the SDK's sum")
	}
	write("__init__.py", "x = 2\n")
	if changed, _ := sdkSum(dir); changed == first {
		t.Error("a changed module left the SDK's sum as it was")
	}
	if _, err := sdkSum(t.TempDir()); err == nil || !strings.Contains(err.Error(), "__init__.py") {
		t.Errorf("a directory without __init__.py: error %v, want it named", err)
	}
}
