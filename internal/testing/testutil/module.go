package testutil

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// ModuleDir is the directory, in the module cache, of the module that the go.mod in
// dir pins: one of hack/tools's, whose files (a CRD, examples) tests read. go mod
// download, unlike go list -m, fetches the module when the cache lacks it, checked
// against the go.sum beside the go.mod.
func ModuleDir(t testing.TB, dir, module string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("downloading %s as %s pins it: %v", module, dir, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download said %s (%v)", out, err)
	}
	return mod.Dir
}
