package agent_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// podEnv is the literal environment the controller gives replica worker-3 of a job of
// 2 PS and 500 workers run by the agent, as NAME=value, and the TF_CONFIG it would have
// written into the pod.
func podEnv(t *testing.T) (env []string, want string) {
	t.Helper()
	job := testutil.MakeTFJob("big", "team").PS(2).Workers(500).Artifacts("s3://bucket/runs", "/model").Obj()
	pod, err := controller.ConstructPod(job, tfv1.ReplicaTypeWorker, 3, controller.PodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tfjob.TensorFlowContainer(pod.Spec.Containers).Env {
		if e.ValueFrom == nil && !strings.HasPrefix(e.Name, "TFK8S_ARTIFACTS") {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	if want, err = controller.NewTFConfigs(job, controller.AddressOptions{}, controller.DefaultCompactTFConfigAbove).For(tfv1.ReplicaTypeWorker, 3); err != nil {
		t.Fatal(err)
	}
	return env, want
}

// TestRunComposesTFConfig runs the agent as a large job's pod runs it, with the cluster
// in place of TF_CONFIG, and checks that the command reads the TF_CONFIG the controller
// would have written, byte for byte, and not the cluster variable.
func TestRunComposesTFConfig(t *testing.T) {
	env, want := podEnv(t)
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, tfconfig.EnvCluster+"=") })
	if i < 0 {
		t.Fatalf("the pod carries no %s: %q", tfconfig.EnvCluster, env)
	}
	cluster := env[i]
	j := &job{dir: t.TempDir()}
	j.env = append(env, "PATH="+os.Getenv("PATH"), tfjob.EnvLogDir+"="+j.path("logs"),
		tfjob.EnvTFConfig+`={"left":"by the template"}`)
	script := `printf %s "$TF_CONFIG" > ` + j.path("tf_config") + `; env > ` + j.path("env")
	if code := j.run(t, nil, "sh", "-c", script); code != 0 {
		t.Fatalf("agent exited %d; stderr:\n%s", code, j.stderr.String())
	}
	got, err := os.ReadFile(j.path("tf_config"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("the command read TF_CONFIG\n%.300s\nwant\n%.300s", got, want)
	}
	t.Logf("the pod carries %d bytes, %s; the command reads a TF_CONFIG of %d", len(cluster), cluster, len(got))
	commandEnv, err := os.ReadFile(j.path("env"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(commandEnv), tfconfig.EnvCluster) {
		t.Errorf("the command's environment holds %s, the agent's own", tfconfig.EnvCluster)
	}
}

// TestRunRefusesABadCluster checks that a cluster the agent cannot read stops the
// replica before its command runs, with the agent's usage exit code and a message
// naming the variable.
func TestRunRefusesABadCluster(t *testing.T) {
	tests := []struct{ name, cluster, replica, message string }{
		{name: "not JSON", cluster: `{"job":`, replica: "worker-0", message: "composing TF_CONFIG: decoding " + tfconfig.EnvCluster},
		{name: "no such replica", cluster: `{"job":"j","namespace":"n","replicas":[{"type":"Worker","count":2,"port":2222}]}`,
			replica: "evaluator", message: "composing TF_CONFIG: " + tfjob.EnvReplica},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &job{dir: t.TempDir()}
			j.env = []string{"PATH=" + os.Getenv("PATH"), tfjob.EnvLogDir + "=" + j.path("logs"),
				tfjob.EnvReplica + "=" + tc.replica, tfconfig.EnvCluster + "=" + tc.cluster}
			code := j.run(t, nil, "touch", j.path("ran"))
			if code != 64 || !strings.Contains(j.stderr.String(), tc.message) {
				t.Errorf("agent exited %d; stderr:\n%s\nwant exit 64 and %q", code, j.stderr.String(), tc.message)
			}
			if _, err := os.Stat(j.path("ran")); err == nil {
				t.Error("the command ran")
			}
		})
	}
}
