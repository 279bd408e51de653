package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/version"
)

func TestPinnedImageArgs(t *testing.T) {
	pushed := map[string]string{
		version.Image("tfk8s-agent"): "sha256:aa",
		images.TensorFlow:            "sha256:bb",
		images.Python:                "sha256:cc",
	}
	want := []string{
		"--agent-image=" + version.Image("tfk8s-agent") + "@sha256:aa",
		"--tensorboard-image=" + images.TensorFlow + "@sha256:bb",
	}
	if diff := cmp.Diff(want, pinnedImageArgs(pushed)); diff != "" {
		t.Errorf("pinned image flags (-want +got):\n%s", diff)
	}
	if got := pinnedImageArgs(nil); len(got) != 0 {
		t.Errorf("with nothing pushed: %q, want no flags (the controller's defaults)", got)
	}
}

func TestRunsWithArgs(t *testing.T) {
	cmd := exec.Command("sleep", "30s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until the child has exec'd sleep, /proc shows the test binary's arguments.
	for i := 0; i < 200; i++ {
		if raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); strings.HasPrefix(string(raw), "sleep\x00") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"30s"}, true},
		{[]string{"30"}, false},
		{[]string{"30s", "x"}, false},
	} {
		got, err := runsWithArgs(cmd.Process.Pid, tc.args)
		if err != nil || got != tc.want {
			t.Errorf("runsWithArgs(%q) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}
