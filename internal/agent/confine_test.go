package agent_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// probeScript tries each way a process of the agent's user has into the agent's memory
// (the agent is its parent), and prints one line per way: what happened. Of the
// agent's environment, which the kernel may let it read, it names the storage
// variables that still have a value.
const probeScript = `
import ctypes, os
agent = os.getppid()
def read(path):
    try:
        with open(path, "rb") as f:
            return "read %d bytes" % len(f.read(1 << 20))
    except OSError as e:
        return e.strerror
try:
    block = open("/proc/%d/environ" % agent, "rb").read().split(b"\0")
    held = [e.split(b"=")[0].decode() for e in block if e.startswith((b"AWS_", b"TFK8S_S3_")) and not e.endswith(b"=")]
    print("environ:", "holds " + " ".join(held) if held else "no storage values")
except OSError as e:
    print("environ:", e.strerror)
print("mem:", read("/proc/%d/mem" % agent))
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE = 0x4206
seized = libc.ptrace(PTRACE_SEIZE, agent, 0, 0) == 0
print("ptrace:", "seized" if seized else os.strerror(ctypes.get_errno()))
caps = {l.split(":")[0]: int(l.split()[1], 16) for l in open("/proc/self/status") if l.startswith("Cap")}
print("CAP_SYS_PTRACE:", " ".join(k for k in sorted(caps) if caps[k] >> 19 & 1) or "none")
`

// probe runs probeScript under the agent and returns its lines by way.
func probe(t *testing.T, j *job, env ...string) map[string]string {
	t.Helper()
	if code := j.run(t, env, "python3", "-c", probeScript); code != 0 {
		t.Fatalf("agent exited %d; stderr:\n%s", code, j.stderr.String())
	}
	got := map[string]string{}
	for line := range strings.Lines(j.stdout.String()) {
		if way, what, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			got[way] = what
		}
	}
	return got
}

// TestRunKeepsTheAgentsMemoryFromTheCommand: the command, root here as in most
// containers, reads neither the agent's environment nor its memory, and cannot trace
// it; with the credentials exposed it keeps the CAP_SYS_PTRACE it was given.
func TestRunKeepsTheAgentsMemoryFromTheCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs the command as root, as a container does: run it as root")
	}
	j := newBareJob(t)
	got := probe(t, j)
	if got["environ"] == "Permission denied" { // as older kernels have it
		got["environ"] = "no storage values"
	}
	want := map[string]string{
		"environ":        "no storage values",
		"mem":            "Permission denied",
		"ptrace":         "Operation not permitted",
		"CAP_SYS_PTRACE": "none",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the command reached of the agent (-want +got):\n%s\nstderr:\n%s", diff, j.stderr.String())
	}
	if strings.Contains(j.stdout.String(), j.srv.SecretKey) {
		t.Errorf("the command printed the secret key:\n%s", j.stdout.String())
	}
	if log := j.storedLog(t, 1); strings.Contains(log, j.srv.SecretKey) {
		t.Errorf("the stored log holds the secret key:\n%s", log)
	}
	// This test's own bounding set holds CAP_SYS_PTRACE, as a container's that adds it.
	if msg := "the command runs without the container's CAP_SYS_PTRACE"; !strings.Contains(j.stderr.String(), msg) {
		t.Errorf("the agent did not say %q; stderr:\n%s", msg, j.stderr.String())
	}

	j.stdout, j.stderr = testutil.SyncBuffer{}, testutil.SyncBuffer{}
	got = probe(t, j, tfjob.EnvExposeStorageCredentials+"=true")
	if got["CAP_SYS_PTRACE"] != "CapBnd CapEff CapPrm" || got["ptrace"] != "seized" {
		t.Errorf("with the credentials exposed, the command has CAP_SYS_PTRACE in %q and ptrace %q; "+
			"want it in CapBnd CapEff CapPrm, and the agent seized", got["CAP_SYS_PTRACE"], got["ptrace"])
	}
}
