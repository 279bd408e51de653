package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/scheme"
)

// The Python SDK's cluster has its own network, apart from the other tests'.
const (
	sdkBridge  = "tfk8se2ep"
	sdkPodCIDR = "10.233.0.0/24"
	// sdkPytestTimeout bounds the whole pytest run; each of its waits is bounded too.
	sdkPytestTimeout = 15 * time.Minute
)

// TestPythonSDK runs the Python SDK's tests, python/tests, against a local cluster of
// its own: the unit tests, and those of every Client method on real jobs, following
// the logs of a job whose pods are not yet created, and the errors of a refused
// credential and of missing S3 settings. pytest runs from the venv make python-venv
// makes, with bin/tfk8s (make build) as the SDK's binary.
func TestPythonSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), sdkPytestTimeout+5*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	python := filepath.Join(root, "_out", "python-venv", "bin", "python")
	for _, need := range []string{filepath.Join(binDir, "tfk8s"), filepath.Join(binDir, "tfk8s-nodeinit"), python} {
		if !fileExists(need) {
			t.Fatalf("no %s: run make build python-venv", need)
		}
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-sdk-node",
		PodCIDR:  sdkPodCIDR,
		Bridge:   sdkBridge,
	}, func() {
		if left := leftNetwork(sdkBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	denied := deniedKubeconfig(t, st.Kubeconfig)
	createSuspendedKubeflowJob(ctx, t, st.Kubeconfig, sdkKubeflowJob)

	ctx, stop := context.WithTimeout(ctx, sdkPytestTimeout)
	defer stop()
	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests")
	cmd.Dir = filepath.Join(root, "python")
	cmd.Env = append(sdkEnviron(),
		"KUBECONFIG="+st.Kubeconfig,
		"TFK8S_CONFIG="+opts.UserConfigFile,
		"TFK8S_BIN="+filepath.Join(binDir, "tfk8s"),
		"TFK8S_E2E_IMAGE="+jobsImage,
		"TFK8S_E2E_TF_IMAGE="+images.TensorFlow,
		"TFK8S_E2E_DENIED_KUBECONFIG="+denied,
		"TFK8S_E2E_KUBEFLOW_JOB="+sdkKubeflowJob,
	)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("pytest took %v:\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("pytest: %v", err)
	}
	if strings.Contains(string(out), "SKIPPED") {
		t.Errorf("pytest skipped tests that this cluster should run")
	}
}

// sdkKubeflowJob is the kubeflow.org TFJob the SDK's tests find beside their own.
const sdkKubeflowJob = "kf-sdk"

// createSuspendedKubeflowJob creates a kubeflow.org TFJob of one worker in namespace
// default, suspended so that it runs nothing: the SDK lists, reads and deletes it.
func createSuspendedKubeflowJob(ctx context.Context, t *testing.T, kubeconfig, name string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	job := &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: kubeflowv1.TFJobSpec{
			RunPolicy: kubeflowv1.RunPolicy{Suspend: ptr.To(true)},
			TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{"Worker": {Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow", Image: jobsImage, Command: []string{"true"}}}},
			}}},
		},
	}
	if err := c.Create(ctx, job); err != nil {
		t.Fatalf("creating kubeflow.org TFJob %s: %v", name, err)
	}
}

// sdkEnviron is the test's environment without the settings of another cluster or
// S3: pytest gets this cluster's alone.
func sdkEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "KUBECONFIG" || name == "TFK8S_CONFIG" || name == "TFK8S_BIN" ||
			strings.HasPrefix(name, "TFK8S_S3_") || strings.HasPrefix(name, "AWS_ACCESS_KEY") || strings.HasPrefix(name, "AWS_SECRET") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// deniedKubeconfig writes a kubeconfig of the cluster whose user is a bearer token the
// API server refuses, and returns its path.
func deniedKubeconfig(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "refused-token"}
	}
	path := filepath.Join(t.TempDir(), "denied-kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
