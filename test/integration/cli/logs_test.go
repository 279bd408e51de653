package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// replicaScript prints a few lines and writes a checkpoint named after its replica.
const replicaScript = `
import os
replica = os.environ["TFK8S_REPLICA"]
os.makedirs("model", exist_ok=True)
for step in range(3):
    print("step", step, "on", replica, flush=True)
with open(os.path.join("model", "ckpt-" + replica), "w") as f:
    f.write("weights of " + replica)
print("done on", replica, flush=True)
`

// TestLogsAndArtifactsOutliveThePods runs each replica's command under the real agent,
// configured from its pod exactly as the controller made it (with local paths for the
// container's), lets the pods go, and reads the logs and artifacts back from S3: while
// submit --follow waits for the job, once the pods are gone, and once the job is gone
// too. There is no kubelet, so no live log: each replica's comes from S3.
func TestLogsAndArtifactsOutliveThePods(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": replicaScript})
	submitted := make(chan result, 1)
	go func() {
		submitted <- f.tfk8s("submit", code, "--name", "mnist", "--workers", "2", "--image", "tf:2.16", "--artifacts", "model", "--follow", "--", "python3", "train.py")
	}()
	pods := f.waitPods("mnist", "mnist-worker-0", "mnist-worker-1")

	modelDirs := map[string]string{}
	for _, name := range []string{"mnist-worker-0", "mnist-worker-1"} {
		modelDirs[name] = runAgent(t, f.ns, pods[name])
		kubelet().Bind(t, f.ns, name, "node-a")
	}
	// Worker 1 first: worker 0's success ends the job.
	kubelet().SetExited(t, f.ns, "mnist-worker-1", 0)
	kubelet().SetExited(t, f.ns, "mnist-worker-0", 0)
	f.waitCondition("mnist", "Succeeded")
	select {
	case r := <-submitted:
		if r.code != 0 || !strings.HasPrefix(r.stdout, "secret/") || !strings.Contains(r.stdout, "tfjob.tfk8s.io/mnist created\n") ||
			!strings.Contains(r.stdout, "[worker-0] done on worker-0\n") || !strings.Contains(r.stdout, "[worker-1] done on worker-1\n") ||
			!strings.HasSuffix(r.stdout, "tfjob.tfk8s.io/mnist succeeded\n") ||
			!strings.Contains(r.stderr, "worker-0: no live log (") {
			t.Errorf("submit --follow: %s", r)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("submit --follow did not return once the job succeeded")
	}
	for name := range pods {
		if err := k8sClient.Delete(context.Background(), pods[name]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	f.waitPods("mnist") // all gone

	checkLogs := func(when string) {
		t.Helper()
		r := f.mustSucceed("logs", "mnist")
		for _, want := range []string{
			"[worker-0] step 0 on worker-0\n", "[worker-0] step 2 on worker-0\n", "[worker-0] done on worker-0\n",
			"[worker-1] step 0 on worker-1\n", "[worker-1] done on worker-1\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: logs lack %q:\n%s", when, want, r)
			}
		}
		for _, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			if !strings.HasPrefix(line, "[worker-0] ") && !strings.HasPrefix(line, "[worker-1] ") {
				t.Errorf("%s: a line without its replica: %q", when, line)
			}
		}
		r = f.mustSucceed("logs", "mnist", "worker-1", "-f")
		if strings.Contains(r.stdout, "worker-0") || !strings.Contains(r.stdout, "[worker-1] done on worker-1\n") {
			t.Errorf("%s: logs of worker-1:\n%s", when, r)
		}

		r = f.mustSucceed("artifacts", "ls", "mnist")
		ckpt := "worker-1/artifacts/" + strings.TrimPrefix(modelDirs["mnist-worker-1"], "/") + "/ckpt-worker-1"
		for _, want := range []string{`(?m)^PATH\s+SIZE\s+MODIFIED$`, `(?m)^` + regexp.QuoteMeta(ckpt) + `\s+19\s+\d{4}-`, `(?m)^worker-0/attempts/1/logs/tensorflow.log\s`, `(?m)^worker-0/attempts/1/attempt.json\s`, `(?m)^worker-0/manifest.json\s`} {
			if !regexp.MustCompile(want).MatchString(r.stdout) {
				t.Errorf("%s: artifacts ls lacks %s:\n%s", when, want, r)
			}
		}
		out := t.TempDir()
		f.mustSucceed("artifacts", "get", "mnist", "-o", out)
		if b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(ckpt))); err != nil || string(b) != "weights of worker-1" {
			t.Errorf("%s: artifacts get: %q, %v", when, b, err)
		}
		out = t.TempDir()
		r = f.mustSucceed("artifacts", "get", "mnist", "worker-0/attempts/1/logs/", "-o", out)
		if b, err := os.ReadFile(filepath.Join(out, "tensorflow.log")); err != nil || !strings.Contains(string(b), "done on worker-0") ||
			!strings.Contains(r.stdout, "1 files verified against the replicas' manifests") {
			t.Errorf("%s: artifacts get worker-0/attempts/1/logs/: %q, %v, %s", when, b, err, r)
		}
	}
	checkLogs("pods gone")
	// Each replica ran once, as its agent recorded.
	r := f.mustSucceed("describe", "mnist")
	for _, w := range []string{"worker-0", "worker-1"} {
		if want := `(?m)^\s+` + w + `\s+1\s+mnist-` + w + `\s+\S+ ago\s+\S+ ago\s+0\s+Completed(: .*)?$`; !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("describe lacks the attempt %s:\n%s", want, r.stdout)
		}
	}
	f.mustSucceed("delete", "mnist", "--wait")
	checkLogs("job gone")
}

// runAgent runs the replica's command as the pod would: the agent, with the pod's
// environment (references to Secrets and to the pod's name and UID resolved), the
// container's paths moved to a temporary directory. It returns where the model
// directory was.
func runAgent(t *testing.T, ns string, pod *corev1.Pod) string {
	t.Helper()
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == "tensorflow" {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil || len(c.Command) < 3 || c.Command[1] != "run" {
		t.Fatalf("pod %s does not run its command under the agent: %+v", pod.Name, c)
	}
	dir := t.TempDir()
	workspace := filepath.Join(dir, "workspace")
	model := filepath.Join(workspace, "model")
	paths, _ := json.Marshal([]string{model})
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		value := e.Value
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			secret := &corev1.Secret{}
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ref.SecretKeyRef.Name}, secret); err != nil {
				t.Fatal(err)
			}
			v, ok := secret.Data[ref.SecretKeyRef.Key]
			if !ok && (ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional) {
				t.Fatalf("secret %s lacks key %s", ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
			}
			value = string(v)
		}
		if ref := e.ValueFrom; ref != nil && ref.FieldRef != nil {
			value = map[string]string{"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "metadata.uid": string(pod.UID)}[ref.FieldRef.FieldPath]
		}
		env = append(env, e.Name+"="+value)
	}
	env = append(env,
		tfjob.EnvCodePath+"="+workspace,
		tfjob.EnvArtifactsPaths+"="+string(paths),
		tfjob.EnvLogDir+"="+filepath.Join(dir, "logs"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, c.Command[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the agent of %s: %v\n%s", pod.Name, err, out)
	}
	return model
}
