//go:build gpu

package gpu

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/nvml"
)

// TestMultiWorkerOnRealGPUs runs gpu_check.py as two workers of one GPU each on a
// local cluster whose node advertises this machine's GPUs (--real-gpus): each worker
// sees exactly one /dev/nvidiaN, not the other's, NVML in its container lists that
// one GPU, TensorFlow names it, and the two train together on theirs.
func TestMultiWorkerOnRealGPUs(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if missing := Missing(ctx, HostEnv(repo)); len(missing) > 0 {
		t.Fatalf("this machine lacks what the GPU test needs:\n  %s", strings.Join(missing, "\n  "))
	}
	if devs, err := nvml.Devices(ctx, filepath.Join(repo, "bin", nvml.Command)); err != nil || len(devs) < 2 {
		t.Fatalf("the GPU test needs 2 GPUs, one per worker; NVML lists %d (%v)", len(devs), err)
	}
	kubeconfig, config := up(ctx, t, repo)
	code := t.TempDir()
	script, err := os.ReadFile("testdata/gpu_check.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(code, "gpu_check.py"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	tfk8s(ctx, t, kubeconfig, config, "submit", code, "--name", "gpu-check", "--image", Image, "--workers", "2", "--gpus", "1",
		"--active-deadline", "15m", "--", "python3", "gpu_check.py")
	tfk8s(ctx, t, kubeconfig, config, "wait", "gpu-check", "--for=condition=Succeeded", "--timeout=15m")
	checkWorkers(t, tfk8s(ctx, t, kubeconfig, config, "logs", "gpu-check"))
}

// up brings up a one-node cluster with the host's GPUs and returns its kubeconfig
// and the CLI's config file; down follows the test.
func up(ctx context.Context, t *testing.T, repo string) (kubeconfig, config string) {
	dir, err := os.MkdirTemp("/var/lib", "tfk8s-gpu-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	opts := localcluster.Options{BinDir: filepath.Join(repo, "bin"), Dir: dir, RealGPUs: true, Nodes: 1,
		Bridge: "tfk8s-gpu0", PodCIDR: "10.237.0.0/24", UserConfigFile: filepath.Join(t.TempDir(), "config"),
		// The CUDA image's layout is pushed only when named: the _out/images scan
		// skips it for its size.
		Images:  []string{filepath.Join(repo, LayoutDir)},
		Timeout: 5 * time.Minute, Progress: os.Stderr}
	t.Cleanup(func() {
		if err := localcluster.Down(context.Background(), opts); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	st, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	return st.Kubeconfig, opts.UserConfigFile
}

// tfk8s runs the CLI in-process and returns its output; a non-zero exit fails t.
func tfk8s(ctx context.Context, t *testing.T, kubeconfig, config string, args ...string) string {
	t.Helper()
	var out, errOut strings.Builder
	env := cli.Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" }, ConfigFile: config}
	if code := cli.Main(ctx, append([]string{"--kubeconfig", kubeconfig, "-n", "default"}, args...), env); code != 0 {
		t.Fatalf("tfk8s %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
	return out.String()
}

// checkWorkers reads each worker's GPUCHECK lines from the job's logs, prefixed by
// replica, and wants each to have seen one device node, its own, listed alone by
// NVML and named by TensorFlow.
func checkWorkers(t *testing.T, logs string) {
	seen := map[string]map[string]string{} // replica -> what -> JSON
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		replica, rest, _ := strings.Cut(sc.Text(), " ")
		_, line, ok := strings.Cut(rest, "GPUCHECK ")
		if !ok {
			continue
		}
		what, value, _ := strings.Cut(line, " ")
		if seen[replica] == nil {
			seen[replica] = map[string]string{}
		}
		seen[replica][what] = value
		t.Logf("%s %s %s", replica, what, value)
	}
	nodeOf := map[string]string{}
	for _, replica := range []string{"[worker-0]", "[worker-1]"} {
		s := seen[replica]
		var nodes, names []string
		var devs []nvml.Device
		_ = json.Unmarshal([]byte(s["device-nodes"]), &nodes)
		_ = json.Unmarshal([]byte(s["tensorflow"]), &names)
		_ = json.Unmarshal([]byte(s["nvml"]), &devs)
		if len(nodes) != 1 || len(devs) != 1 || len(names) != 1 || s["trained"] == "" {
			t.Errorf("%s saw device nodes %v, NVML devices %v, TensorFlow GPUs %v, trained %q; want one of each and a finished training",
				replica, nodes, devs, names, s["trained"])
			continue
		}
		if want := "/dev/nvidia" + itoa(devs[0].Minor); nodes[0] != want {
			t.Errorf("%s has %s, but NVML in it lists %s (%s)", replica, nodes[0], want, devs[0].Name)
		}
		nodeOf[replica] = nodes[0]
	}
	if len(nodeOf) == 2 && nodeOf["[worker-0]"] == nodeOf["[worker-1]"] {
		t.Errorf("both workers have %s: want a GPU each", nodeOf["[worker-0]"])
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
