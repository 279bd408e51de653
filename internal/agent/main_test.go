package agent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/agent"
	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// agentBin is the agent built once for the package's tests, as the controller ships it.
var agentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tfk8s-agent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentBin = filepath.Join(dir, "tfk8s-agent")
	build := exec.Command("go", "build", "-o", agentBin, "github.com/tfk8s/tfk8s/cmd/tfk8s-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the agent: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// trainScript is a stand-in trainer: it imports a module shipped with the code, reads
// its data, and writes a checkpoint every interval; on SIGTERM it writes a last
// checkpoint and exits 42.
const trainScript = `
import os, signal, sys, time
from lib.helper import greeting

model, steps, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
data = open(os.environ["DATA_FILE"]).read().strip()
os.makedirs(model, exist_ok=True)
print(greeting(), "data:", data, flush=True)

def checkpoint(name):
    tmp = os.path.join(model, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write("weights of %s after %s\n" % (name, data))
    os.rename(tmp, os.path.join(model, name))
    with open(os.path.join(model, "checkpoint"), "w") as f:
        f.write(name + "\n")

def on_term(signum, frame):
    checkpoint("ckpt-final")
    print("received SIGTERM, saved ckpt-final", flush=True)
    sys.exit(42)

signal.signal(signal.SIGTERM, on_term)
for step in range(steps):
    checkpoint("ckpt-%d" % step)
    print("step", step, flush=True)
    time.sleep(interval)
print("done", flush=True)
`

// job is one run of the agent against a test S3 server.
type job struct {
	srv      *s3server.Server
	client   *storage.Client
	dir      string // the "container" filesystem
	codeURI  storage.URI
	codeSHA  string
	env      []string
	stdout   testutil.SyncBuffer
	stderr   testutil.SyncBuffer
	cmd      *exec.Cmd
	done     chan struct{}
	exitCode int
}

// newJob uploads code and data and prepares the agent's environment, as the controller
// would set it for replica worker-1 of job mnist in namespace team.
func newJob(t *testing.T) *job {
	t.Helper()
	srv := s3server.Start(t)
	j := &job{srv: srv, client: srv.Client(t), dir: t.TempDir()}
	ctx := testContext(t)

	src := t.TempDir()
	testutil.WriteFile(t, filepath.Join(src, "train.py"), trainScript)
	testutil.WriteFile(t, filepath.Join(src, "lib", "__init__.py"), "")
	testutil.WriteFile(t, filepath.Join(src, "lib", "helper.py"), "def greeting():\n    return 'hello from lib'\n")
	testutil.WriteFile(t, filepath.Join(src, "scratch", "huge.bin"), "left out by .tfk8signore")
	testutil.WriteFile(t, filepath.Join(src, ".tfk8signore"), "scratch/\n")
	archive, err := pack.Pack(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	j.codeSHA = archive.SHA256
	j.codeURI = storage.URI{Bucket: srv.Bucket, Key: archive.Key("code/team")}
	if err := j.client.UploadFile(ctx, archive.Path, j.codeURI, storage.UploadOptions{}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	testutil.WriteFile(t, filepath.Join(data, "train", "part-0.csv"), "toy-dataset-v1")
	if _, err := j.client.SyncDir(ctx, data, storage.URI{Bucket: srv.Bucket, Key: "datasets/toy/"}, storage.NewSyncState()); err != nil {
		t.Fatal(err)
	}

	j.env = append(srv.Env(),
		"PATH="+os.Getenv("PATH"),
		tfjob.EnvCodeSource+"="+j.codeURI.String(),
		tfjob.EnvCodePath+"="+j.path("workspace"),
		tfjob.EnvData+"="+fmt.Sprintf(`[{"source": "s3://%s/datasets/toy/", "path": %q}]`, srv.Bucket, j.path("data")),
		tfjob.EnvArtifactsDestination+"=s3://"+srv.Bucket+"/runs",
		tfjob.EnvArtifactsPaths+"="+fmt.Sprintf(`[%q]`, j.path("model")),
		tfjob.EnvArtifactsInterval+"=300ms",
		tfjob.EnvNamespace+"=team", tfjob.EnvJobName+"=mnist", tfjob.EnvReplica+"=worker-1",
		tfjob.EnvLogDir+"="+j.path("logs"),
		"DATA_FILE="+j.path("data", "train", "part-0.csv"),
	)
	return j
}

// path returns a path in the job's filesystem.
func (j *job) path(elem ...string) string {
	return filepath.Join(append([]string{j.dir}, elem...)...)
}

// replicaURI returns the URI of a key under the replica's prefix.
func (j *job) replicaURI(elem ...string) storage.URI {
	return storage.URI{Bucket: j.srv.Bucket, Key: "runs/team/mnist/worker-1"}.Join(elem...)
}

// start runs `tfk8s-agent run -- args...` with the job's environment plus extra.
func (j *job) start(t *testing.T, extraEnv []string, args ...string) {
	t.Helper()
	j.cmd = exec.Command(agentBin, append([]string{"run", "--"}, args...)...)
	j.cmd.Env = append(append([]string(nil), j.env...), extraEnv...)
	j.cmd.Stdout, j.cmd.Stderr = &j.stdout, &j.stderr
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, cmd := make(chan struct{}), j.cmd
	j.done = done
	go func() {
		_ = cmd.Wait()
		j.exitCode = cmd.ProcessState.ExitCode()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// wait waits for the agent to exit and returns its exit code.
func (j *job) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-j.done:
		return j.exitCode
	case <-time.After(timeout):
		t.Fatalf("the agent did not exit within %v; stderr:\n%s", timeout, j.stderr.String())
		return -1
	}
}

// run runs the agent to its end.
func (j *job) run(t *testing.T, extraEnv []string, args ...string) int {
	t.Helper()
	j.start(t, extraEnv, args...)
	return j.wait(t, time.Minute)
}

// eventually polls cond every 100ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testContext bounds a test's storage calls.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// download returns the content of an object.
func download(t *testing.T, c *storage.Client, u storage.URI) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := c.Download(testContext(t), u, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// manifest reads the replica's manifest.
func (j *job) manifest(t *testing.T) storage.Manifest {
	t.Helper()
	var m storage.Manifest
	if err := json.Unmarshal([]byte(download(t, j.client, j.replicaURI(agent.ManifestName))), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkStoredModel checks that every file of the local model directory is stored with
// its content and listed in the manifest with its size and SHA-256, and that every
// file the manifest lists is stored with the size and SHA-256 it says. (It may list
// files gone since, such as a trainer's temporary files caught by a periodic upload.)
func (j *job) checkStoredModel(t *testing.T, m storage.Manifest) {
	t.Helper()
	for _, f := range m.Files {
		content := download(t, j.client, storage.URI{Bucket: j.srv.Bucket, Key: f.Key})
		sum := sha256.Sum256([]byte(content))
		if int64(len(content)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("manifest says %s has %d bytes, sha256 %s; stored: %d bytes, sha256 %x", f.Key, f.Size, f.SHA256, len(content), sum)
		}
	}
	listed := map[string]storage.ManifestFile{}
	for _, f := range m.Files {
		listed[f.Path] = f
	}
	entries, err := os.ReadDir(j.path("model"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		local := j.path("model", e.Name())
		content, err := os.ReadFile(local)
		if err != nil {
			t.Fatal(err)
		}
		key := j.replicaURI("artifacts", strings.TrimPrefix(local, "/"))
		if got := download(t, j.client, key); got != string(content) {
			t.Errorf("%s holds %q, want %q", key, got, content)
		}
		sum := sha256.Sum256(content)
		want := storage.ManifestFile{Path: local, Key: key.Key, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])}
		if got := listed[local]; got != want {
			t.Errorf("manifest entry of %s = %+v, want %+v", local, got, want)
		}
	}
}

// localFiles returns the manifest's files that exist locally.
func localFiles(t *testing.T, m storage.Manifest) []storage.ManifestFile {
	t.Helper()
	var out []storage.ManifestFile
	for _, f := range m.Files {
		if _, err := os.Stat(f.Path); err == nil {
			out = append(out, f)
		}
	}
	return out
}
