package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// Kubeflow's SDK's cluster has its own network, apart from the other tests'.
const (
	kubeflowBridge  = "tfk8se2ek"
	kubeflowPodCIDR = "10.236.0.0/24"
	// kubeflowScriptTimeout bounds the SDK's script; each of its waits is bounded too.
	kubeflowScriptTimeout = 12 * time.Minute
)

// TestKubeflowSDK drives kubeflow.org/v1 TFJobs on a local cluster with Kubeflow's own
// Python SDK, kubeflow-training 1.9.4 from PyPI, in the venv make kubeflow-venv makes:
// test/e2e/kubeflow/sdk_calls.py creates a Chief, PS and Workers job from a
// KubeflowOrgV1TFJob and one from a train_func, both training with
// ParameterServerStrategy in the TensorFlow image, then lists, gets, waits for,
// reads the logs of (by master, replica type and index), updates and deletes them,
// each call as Kubeflow's users write it; tfk8s list and logs show the same jobs. Once
// it is done, no pod of either job is left. Before, on the same cluster, a running job
// moves from training-operator to tfk8s (testMigrationFromTrainingOperator), and
// training-operator's own examples run (testKubeflowExamplesRun). After, the cluster is
// MultiKueue's worker (testMultiKueue), saving a second cluster's start.
func TestKubeflowSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), kubeflowScriptTimeout+8*time.Minute+4*migrateWait)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(root, "_out", "kubeflow-venv", "bin", "python")
	for _, need := range []string{
		filepath.Join(binDir, "tfk8s-nodeinit"), python,
		filepath.Join(root, "_out", "images", "tensorflow", "index.json"),
	} {
		if !fileExists(need) {
			t.Fatalf("no %s: run make build kubeflow-venv tensorflow-image", need)
		}
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-kubeflow-node",
		PodCIDR:  kubeflowPodCIDR,
		Bridge:   kubeflowBridge,
	}, func() {
		if left := leftNetwork(kubeflowBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})

	// First, while the cluster has no other kubeflow.org job: the migration test stops
	// tfk8s's controller for a while, and a failure may leave it stopped.
	if !t.Run("migration from training-operator", func(t *testing.T) {
		testMigrationFromTrainingOperator(ctx, t, opts, st)
	}) {
		t.FailNow()
	}
	t.Run("training-operator's examples run", func(t *testing.T) {
		testKubeflowExamplesRun(ctx, t, st.Kubeconfig)
	})

	script, stop := context.WithTimeout(ctx, kubeflowScriptTimeout)
	defer stop()
	cmd := exec.CommandContext(script, python, "-u", filepath.Join(root, "test", "e2e", "kubeflow", "sdk_calls.py"))
	cmd.Env = append(sdkEnviron(),
		"KUBECONFIG="+st.Kubeconfig,
		"KF_IMAGE="+images.TensorFlow,
		"KF_PROGRAM="+filepath.Join(root, "examples", "tensorflow", "ps_strategy.py"),
		"KF_TFK8S="+filepath.Join(binDir, "tfk8s"),
		"TFK8S_CONFIG="+opts.UserConfigFile,
	)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("Kubeflow's SDK took %v:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("sdk_calls.py: %v", err)
	}
	checkKubeflowPodsGone(ctx, t, st.Kubeconfig)
	t.Run("MultiKueue", func(t *testing.T) { testMultiKueue(ctx, t, binDir, st.Kubeconfig) })
}

// checkKubeflowPodsGone waits until the pods of the jobs delete_job deleted are gone, as
// training-operator's users expect of a deleted job.
func checkKubeflowPodsGone(ctx context.Context, t *testing.T, kubeconfig string) {
	t.Helper()
	cs := clientset(t, kubeconfig)
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name"})
		if err != nil {
			return false, err
		}
		left = left[:0]
		for _, p := range pods.Items {
			left = append(left, fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase))
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("pods of the deleted jobs left: %v (%v)", left, err)
	}
}
