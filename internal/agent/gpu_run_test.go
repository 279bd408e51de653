package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/nvml"
)

// The GPU sampler, tfk8s-nvml beside the agent, is the agent's own: it ends with the
// command without being taken for something the command left running.
func TestRunEndsTheGPUSamplerItself(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tfk8s-agent")
	data, err := os.ReadFile(agentBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// A sampler that samples nothing until its input closes, as tfk8s-nvml does.
	started := filepath.Join(dir, "started")
	script := "#!/bin/sh\ntouch " + started + "\nwhile read line; do :; done\n"
	if err := os.WriteFile(filepath.Join(dir, nvml.Command), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := agentBin
	agentBin = bin
	t.Cleanup(func() { agentBin = saved })

	j := newBareJob(t)
	j.start(t, nil, "sh", "-c", "while [ ! -e "+started+" ]; do sleep 0.05; done; echo main done")
	if code := j.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("agent exited %d, want 0; stderr:\n%s", code, j.stderr.String())
	}
	log := j.storedLog(t, 1)
	if !strings.Contains(log, "main done") {
		t.Errorf("stored log lacks the command's output:\n%s", log)
	}
	for _, unwanted := range []string{"left", nvml.Command} {
		if strings.Contains(log, unwanted) {
			t.Errorf("stored log says %q:\n%s", unwanted, log)
		}
	}
}
