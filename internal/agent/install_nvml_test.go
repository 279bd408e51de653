package agent_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/nvml"
)

// The agent image has tfk8s-nvml beside the agent; install copies both into the pod.
func TestInstallCarriesNVML(t *testing.T) {
	src := t.TempDir()
	self, err := os.ReadFile(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	nvmlCmd := []byte("#!/bin/sh\nexit 3\n")
	for name, data := range map[string][]byte{agent.BinaryName: self, nvml.Command: nvmlCmd} {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "bin")
	if out, err := exec.Command(filepath.Join(src, agent.BinaryName), "install", dst).CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dst, nvml.Command))
	if err != nil || !bytes.Equal(got, nvmlCmd) {
		t.Errorf("installed %s: %q, %v; want a copy", nvml.Command, got, err)
	}
}
