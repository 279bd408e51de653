package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestKubeflowJobs: list, describe, wait and delete show and act on Kubeflow's
// kubeflow.org/v1 TFJobs beside tfk8s.io's. The suite's controller started before the
// kubeflow.org CRD was served, so it leaves these jobs alone: the test writes their
// status as a controller would. A name both groups have names the tfk8s.io job;
// kubeflow.org/NAME names the other.
func TestKubeflowJobs(t *testing.T) {
	f := newFixture(t)
	serveKubeflow(t)
	createKubeflowJob(t, f.ns, "kf")
	setKubeflowConditions(t, f.ns, "kf", "Created", "Running")
	f.mustSucceed("submit", "--name", "own", "--image", "tf:2.16", "--", "python3", "x.py")

	r := f.mustSucceed("list")
	assertLines(t, r.stdout,
		`^NAME\s+STATE\s+WORKERS\s+PS\s+GPUS\s+AGE$`,
		`^kubeflow.org/kf\s+Running\s+2\s+1\s+-\s+\d+s$`,
		`^own\s+(<none>|Created|Running)\s+1\s+0\s+-\s+\d+s$`)
	r = f.mustSucceed("describe", "kf")
	for _, want := range []string{`(?m)^Name:\s+kf$`, `(?m)^Kind:\s+TFJob \(kubeflow.org/v1\)$`, `(?m)^State:\s+Running$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("describe kf: no line matching %s:\n%s", want, r.stdout)
		}
	}

	if r := f.mustSucceed("get", "kf", "-o", "json"); !strings.Contains(r.stdout, `"apiVersion": "kubeflow.org/v1"`) {
		t.Errorf("get kf -o json does not say its apiVersion kubeflow.org/v1:\n%s", r.stdout)
	}
	if r := f.mustSucceed("suspend", "kf"); strings.TrimSpace(r.stdout) != "tfjob.kubeflow.org/kf suspended" {
		t.Errorf("suspend kf said %s", r)
	}
	if suspend, _, _ := unstructured.NestedBool(getKubeflowJob(t, f.ns, "kf").Object, "spec", "runPolicy", "suspend"); !suspend {
		t.Error("suspend kf left the kubeflow.org job's runPolicy.suspend unset")
	}
	f.mustSucceed("resume", "kubeflow.org/kf")
	// The extras of tfk8s.io jobs are refused, saying how to move the job over.
	for _, args := range [][]string{{"artifacts", "ls", "kubeflow.org/kf"}, {"tensorboard", "kf"}, {"runs", "show", "kubeflow.org/kf"}} {
		if r := f.tfk8s(args...); r.code == 0 || !strings.Contains(r.stderr, "tfjob.kubeflow.org/kf") || !strings.Contains(r.stderr, "tfk8s render --to tfk8s") {
			t.Errorf("%v: want a refusal naming tfjob.kubeflow.org/kf and tfk8s render --to tfk8s, got %s", args, r)
		}
	}

	// render --to tfk8s moves the live job to a tfk8s.io manifest that submit -f takes.
	r = f.mustSucceed("render", "--to", "tfk8s", "kf")
	for _, want := range []string{`(?m)^apiVersion: tfk8s.io/v1alpha1$`, `(?m)^  name: kf$`, `(?m)^    cleanPodPolicy: None$`} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("render --to tfk8s kf: no line matching %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "uid:") || strings.Contains(r.stdout, "resourceVersion:") {
		t.Errorf("render --to tfk8s kf copied the live object's identity:\n%s", r.stdout)
	}
	if r := f.tfk8s("render", "--to", "tfk8s", "kf", "--workers", "3"); r.code == 0 || !strings.Contains(r.stderr, "--workers") {
		t.Errorf("render --to with a flag of submit: want a refusal naming --workers, got %s", r)
	}
	moved := filepath.Join(t.TempDir(), "moved.yaml")
	if err := os.WriteFile(moved, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustSucceed("submit", "-f", moved, "--name", "kf-moved")
	if r := f.mustSucceed("describe", "kf-moved"); strings.Contains(r.stdout, "kubeflow.org") {
		t.Errorf("the moved job is not a tfk8s.io one:\n%s", r.stdout)
	}

	done := make(chan result, 1)
	go func() { done <- f.tfk8s("wait", "kf", "--for=condition=Succeeded", "--timeout=30s") }()
	setKubeflowConditions(t, f.ns, "kf", "Created", "Running", "Succeeded")
	if r := <-done; r.code != 0 || strings.TrimSpace(r.stdout) != "tfjob.kubeflow.org/kf condition met (Succeeded)" {
		t.Errorf("wait for a kubeflow.org job: %s", r)
	}

	// A name both groups have names the tfk8s.io job alone, as list prints it.
	createKubeflowJob(t, f.ns, "own")
	if r := f.mustSucceed("describe", "own"); strings.Contains(r.stdout, "kubeflow.org") {
		t.Errorf("describe own described the kubeflow.org job, not the tfk8s.io one:\n%s", r.stdout)
	}
	if r := f.mustSucceed("describe", "kubeflow.org/own"); !strings.Contains(r.stdout, "TFJob (kubeflow.org/v1)") {
		t.Errorf("describe kubeflow.org/own did not describe the kubeflow.org job:\n%s", r.stdout)
	}
	r = f.mustSucceed("delete", "kubeflow.org/own", "kf", "--wait")
	if got := strings.TrimSpace(r.stdout); got != "tfjob.kubeflow.org/own deleted\ntfjob.kubeflow.org/kf deleted" {
		t.Errorf("delete of kubeflow.org jobs said:\n%s", r)
	}
	for _, name := range []string{"own", "kf"} {
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, kubeflowJob()); !apierrors.IsNotFound(err) {
			t.Errorf("kubeflow.org job %s still there after delete --wait: %v", name, err)
		}
	}
	// The tfk8s.io job of the same name is untouched, and now named alone.
	f.mustSucceed("describe", "own")
}

// serveKubeflow installs config/crd/kubeflow's CRD and its admission policy (again,
// for a second test).
func serveKubeflow(t *testing.T) {
	t.Helper()
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// getKubeflowJob reads the kubeflow.org job.
func getKubeflowJob(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := kubeflowJob()
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func kubeflowJob() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kubeflow.org/v1")
	u.SetKind("TFJob")
	return u
}

// createKubeflowJob creates a training-operator style TFJob: a PS and two workers.
func createKubeflowJob(t *testing.T, namespace, name string) {
	t.Helper()
	replica := func(n int64) map[string]any {
		return map[string]any{"replicas": n, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "tensorflow", "image": "tf:2.16", "command": []any{"python3", "x.py"}}},
		}}}
	}
	u := kubeflowJob()
	u.SetNamespace(namespace)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"tfReplicaSpecs": map[string]any{"PS": replica(1), "Worker": replica(2)}}
	if err := k8sClient.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// setKubeflowConditions writes the job's status conditions, each True, in Kubeflow's
// shape, as its controller would.
func setKubeflowConditions(t *testing.T, namespace, name string, types ...string) {
	t.Helper()
	u := kubeflowJob()
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now().UTC().Format("2006-01-02T15:04:05Z")
	var conds []any
	for _, typ := range types {
		conds = append(conds, map[string]any{"type": typ, "status": "True", "reason": "TFJob" + typ,
			"message": "TFJob " + name + " is " + strings.ToLower(typ), "lastUpdateTime": now, "lastTransitionTime": now})
	}
	u.Object["status"] = map[string]any{"conditions": conds, "replicaStatuses": map[string]any{}}
	if err := k8sClient.Status().Update(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}
