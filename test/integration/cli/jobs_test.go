package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// TestListGetDescribe shows a running distributed job: pods placed on nodes, one
// restarted after an OOM kill.
func TestListGetDescribe(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "mnist", "--image", "tf:2.16", "--ps", "1", "--workers", "2", "--gpus", "1", "--artifacts", "model", "--", "python3", "train.py")
	f.waitPods("mnist", "mnist-ps-0", "mnist-worker-0", "mnist-worker-1")
	for i, pod := range []string{"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"} {
		kubelet().Bind(t, f.ns, pod, []string{"node-a", "node-b", "node-c"}[i])
	}
	kubelet().SetRunning(t, f.ns, "mnist-ps-0", "mnist-worker-0")
	kubelet().SetRestarted(t, f.ns, "mnist-worker-1", 1, 137)
	f.waitCondition("mnist", tfv1.JobRunning)
	// A second job, not yet running, in the same namespace.
	f.mustSucceed("submit", "--name", "other", "--image", "tf:2.16", "--chief", "--workers", "0", "--", "python3", "x.py")

	r := f.mustSucceed("list")
	assertLines(t, r.stdout,
		`^NAME\s+STATE\s+WORKERS\s+PS\s+GPUS\s+AGE$`,
		`^mnist\s+Running\s+2\s+1\s+2/2\s+\d+s$`,
		`^other\s+(<none>|Created)\s+0\s+0\s+-\s+\d+s$`)

	r = f.mustSucceed("list", "-A")
	if !regexp.MustCompile(`(?m)^NAMESPACE\s+NAME\s+STATE`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^`+f.ns+`\s+mnist\s+Running\s+2\s+1\s`).MatchString(r.stdout) {
		t.Errorf("list -A:\n%s", r)
	}
	r = f.mustSucceed("list", "-o", "wide")
	if !regexp.MustCompile(`(?m)^mnist\s+Running\s+2\s+1\s+2/2\s+\S+\s+0\s+0\s+3\s+0\s+0\s+1\s+-\s+-\s+tf:2.16$`).MatchString(r.stdout) {
		t.Errorf("list -o wide:\n%s", r)
	}
	r = f.mustSucceed("list", "-o", "json")
	var list struct {
		Kind  string       `json:"kind"`
		Items []tfv1.TFJob `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 || list.Items[0].Name != "mnist" {
		t.Errorf("list -o json: %v\n%s", err, r)
	}

	r = f.mustSucceed("get", "mnist")
	assertLines(t, r.stdout, `^NAME\s+STATE\s+WORKERS\s+PS\s+GPUS\s+AGE$`, `^mnist\s+Running\s+2\s+1\s+2/2\s+\d+s$`)
	r = f.mustSucceed("get", "mnist", "-o", "yaml")
	job := &tfv1.TFJob{}
	if err := yaml.Unmarshal([]byte(r.stdout), job); err != nil || job.Kind != "TFJob" || job.Name != "mnist" || job.Status.State != tfv1.JobRunning || len(job.ManagedFields) != 0 {
		t.Errorf("get -o yaml: %v\n%s", err, r)
	}

	r = f.mustSucceed("describe", "mnist", "--replica", "worker-1")
	for _, want := range []string{
		`(?m)^State:\s+Running$`,
		`(?m)^Artifacts:\s+s3://` + f.srv.Bucket + `/runs/` + f.ns + `/mnist/[0-9a-f]{8}/<replica>/artifacts/$`,
		`(?m)^\s+Paths:\s+/workspace/model$`,
		`(?m)^Logs:\s+s3://` + f.srv.Bucket + `/runs/` + f.ns + `/mnist/[0-9a-f]{8}/<replica>/attempts/<n>/logs/$`,
		`(?m)^Code:\s+s3://` + f.srv.Bucket + `/code/sha256-[0-9a-f]{64}\.tar\.gz -> /workspace$`,
		`(?m)^\s+PS\s+1\s+1\s+0\s+0\s+0\s`,
		`(?m)^\s+Worker\s+2\s+2\s+0\s+0\s+1\s+0\s+2/2\s`,
		`(?m)^GPUs:\s+2 allocated of 2 requested$`,
		`(?m)^\s+mnist-ps-0\s+ps-0\s+Running\s+node-a\s+0\s+-\s`,
		`(?m)^\s+mnist-worker-1\s+worker-1\s+Running\s+node-c\s+1\s+137 Error\s`,
		`(?m)^\s+Running\s+True\s+TFJobRunning\s`,
		`(?m)^\s+Normal\s+TFJobRunning\s+\S+\s+tfk8s-controller\s+every replica is running$`,
		`(?s)TF_CONFIG \(worker-1\):\n  \{\n.*"task": \{\n\s+"type": "worker",\n\s+"index": 1\n`,
		`"mnist-ps-0.mnist.` + f.ns + `.svc:2222"`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("describe lacks %s:\n%s", want, r.stdout)
		}
	}
	// The default replica is the first.
	if r = f.mustSucceed("describe", "mnist"); !strings.Contains(r.stdout, "TF_CONFIG (ps-0):") {
		t.Errorf("describe without --replica:\n%s", r.stdout)
	}
}

func TestSuspendResume(t *testing.T) {
	f := newFixture(t)
	f.mustSucceed("submit", "--name", "pausable", "--image", "tf:2.16", "--workers", "2", "--env", "A=1", "--", "python3", "x.py")
	f.waitPods("pausable", "pausable-worker-0", "pausable-worker-1")
	before := f.getJob("pausable")

	r := f.mustSucceed("suspend", "pausable")
	if strings.TrimSpace(r.stdout) != "tfjob.tfk8s.io/pausable suspended" {
		t.Errorf("suspend said:\n%s", r)
	}
	job := f.getJob("pausable")
	if job.Spec.RunPolicy.Suspend == nil || !*job.Spec.RunPolicy.Suspend {
		t.Fatalf("spec.runPolicy.suspend = %v after suspend", job.Spec.RunPolicy.Suspend)
	}
	// Only that field changed.
	job.Spec.RunPolicy.Suspend = nil
	if a, b := mustYAML(t, before.Spec), mustYAML(t, job.Spec); a != b {
		t.Errorf("suspend changed more than runPolicy.suspend:\nbefore:\n%s\nafter:\n%s", a, b)
	}
	f.mustSucceed("wait", "pausable", "--for=condition=Suspended", "--timeout=30s")
	f.waitPods("pausable") // the controller deleted them

	f.mustSucceed("resume", "pausable")
	if job := f.getJob("pausable"); job.Spec.RunPolicy.Suspend == nil || *job.Spec.RunPolicy.Suspend {
		t.Errorf("spec.runPolicy.suspend = %v after resume", job.Spec.RunPolicy.Suspend)
	}
	f.waitPods("pausable", "pausable-worker-0", "pausable-worker-1")
}

func TestWait(t *testing.T) {
	f := newFixture(t)
	f.mustSucceed("submit", "--name", "ok", "--image", "tf:2.16", "--", "python3", "x.py")
	f.mustSucceed("submit", "--name", "bad", "--image", "tf:2.16", "--", "python3", "x.py")
	f.waitPods("ok", "ok-worker-0")
	f.waitPods("bad", "bad-worker-0")

	// A job still running: the timeout ends the wait.
	start := time.Now()
	r := f.tfk8s("wait", "ok", "--for=condition=Succeeded", "--timeout=1s")
	if r.code != 1 || !strings.Contains(r.stderr, "timed out after 1s waiting for tfjob ok to be Succeeded") || time.Since(start) > 10*time.Second {
		t.Errorf("wait with a timeout: %s", r)
	}

	// Waits started before the jobs finish return once they do.
	results := map[string]chan result{"ok": make(chan result, 1), "bad": make(chan result, 1), "submit": make(chan result, 1)}
	for _, name := range []string{"ok", "bad"} {
		go func() { results[name] <- f.tfk8s("wait", name, "--for=condition=Succeeded", "--timeout=60s") }()
	}
	go func() {
		results["submit"] <- f.tfk8s("submit", "--name", "waited", "--image", "tf:2.16", "--wait", "--", "python3", "x.py")
	}()
	time.Sleep(time.Second) // the waits are polling
	f.waitPods("waited", "waited-worker-0")
	for _, pod := range []string{"ok-worker-0", "bad-worker-0", "waited-worker-0"} {
		kubelet().Bind(t, f.ns, pod, "node-a")
	}
	kubelet().SetExited(t, f.ns, "ok-worker-0", 0)
	kubelet().SetExited(t, f.ns, "bad-worker-0", 3)
	kubelet().SetExited(t, f.ns, "waited-worker-0", 0)

	if r := <-results["ok"]; r.code != 0 || strings.TrimSpace(r.stdout) != "tfjob.tfk8s.io/ok condition met (Succeeded)" {
		t.Errorf("wait for a job that succeeds: %s", r)
	}
	if r := <-results["bad"]; r.code != 1 || !strings.Contains(r.stderr, "tfjob bad failed, so it will never be Succeeded") {
		t.Errorf("wait for a job that fails: %s", r)
	}
	if r := <-results["submit"]; r.code != 0 || !strings.Contains(r.stdout, "tfjob.tfk8s.io/waited created\ntfjob.tfk8s.io/waited succeeded\n") {
		t.Errorf("submit --wait: %s", r)
	}
	// Waiting for what has happened returns at once.
	f.mustSucceed("wait", "bad", "--for=condition=Failed")
}

func TestDeleteAndUnknownJobs(t *testing.T) {
	f := newFixture(t)
	if r := f.mustSucceed("list"); r.stdout != "" || r.stderr != "No tfjobs found in "+f.ns+" namespace.\n" {
		t.Errorf("list of an empty namespace: %s", r)
	}
	f.mustSucceed("submit", "--name", "doomed", "--image", "tf:2.16", "--", "python3", "x.py")
	gone := make(chan result, 1)
	go func() { gone <- f.tfk8s("wait", "doomed", "--for=delete", "--timeout=30s") }()
	r := f.mustSucceed("delete", "doomed", "--wait")
	if strings.TrimSpace(r.stdout) != "tfjob.tfk8s.io/doomed deleted" {
		t.Errorf("delete said:\n%s", r)
	}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "doomed"}, &tfv1.TFJob{}); !apierrors.IsNotFound(err) {
		t.Errorf("the job is still there after delete --wait: %v", err)
	}
	if r := <-gone; r.code != 0 {
		t.Errorf("wait --for=delete: %s", r)
	}

	want := `tfjob "nope" not found in namespace "` + f.ns + `"`
	for _, args := range [][]string{
		{"get", "nope"}, {"describe", "nope"}, {"delete", "nope"}, {"suspend", "nope"}, {"resume", "nope"},
		{"wait", "nope", "--for=condition=Succeeded"}, {"logs", "nope"}, {"artifacts", "ls", "nope"},
	} {
		r := f.tfk8s(args...)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("tfk8s %v: want a non-zero exit and %q, got %s", args, want, r)
		}
	}
	// A job with pods that have not started has no logs yet, and says so.
	f.mustSucceed("submit", "--name", "pending", "--image", "tf:2.16", "--", "python3", "x.py")
	f.waitPods("pending", "pending-worker-0")
	if r := f.tfk8s("logs", "pending"); r.code == 0 || !strings.Contains(r.stderr, "no logs of tfjob pending yet") {
		t.Errorf("logs of a pending job: %s", r)
	}
}

// assertLines checks that the lines of out match the patterns, in order.
func assertLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(patterns) {
		t.Errorf("got %d lines, want %d:\n%s", len(lines), len(patterns), out)
		return
	}
	for i, p := range patterns {
		if !regexp.MustCompile(p).MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i+1, lines[i], p)
		}
	}
}
