// Package cli tests the tfk8s command line against a real control plane, with the
// TFJob controller running in-process, and a real S3 server (versitygw) per test. The
// commands run in-process through cli.Main with their own streams and environment.
// There is no kubelet: a test plays it by binding pods and writing their status, and
// runs the real tfk8s-agent as a local process where a replica's work matters.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
	clientset kubernetes.Interface
	// agentBin is the tfk8s-agent, built once for the package's tests.
	agentBin string
)

func TestMain(m *testing.M) {
	os.Exit(testutil.RunSuite(m, controlplane.Options{}, setUp))
}

// setUp builds the agent once and runs the controller for the whole package, so that
// submitted jobs get pods.
func setUp(s *testutil.Suite) (func() error, error) {
	cp, k8sClient = s.ControlPlane, s.Client
	var err error
	if clientset, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	tmp, err := os.MkdirTemp("", "tfk8s-cli-test-")
	if err != nil {
		return nil, err
	}
	agentBin = filepath.Join(tmp, "tfk8s-agent")
	build := exec.Command("go", "build", "-o", agentBin, "github.com/tfk8s/tfk8s/cmd/tfk8s-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("building the agent: %w\n%s", err, out)
	}
	cfg := *cp.Config
	mgr, err := controller.NewManager(&cfg, controller.ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("creating controller: %w", err)
	}
	stop := testutil.StartManager(mgr)
	return func() error {
		defer os.RemoveAll(tmp)
		return stop()
	}, nil
}

// fixture is one test's namespace and S3 server.
type fixture struct {
	t   *testing.T
	ns  string
	srv *s3server.Server
	env map[string]string
	// digestCache is the CLI's digest cache file; "" keeps none.
	digestCache string
}

// newFixture gives the test a namespace and a fresh S3 server with an empty bucket; the
// CLI finds the server through the environment, as a user's shell would give it.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, s3server.Start(t))
}

// newFixtureOn is newFixture with the S3 server srv.
func newFixtureOn(t *testing.T, srv *s3server.Server) *fixture {
	t.Helper()
	f := &fixture{t: t, ns: testutil.Namespace(t, k8sClient), srv: srv, env: map[string]string{}}
	for _, kv := range f.srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		f.env[k] = v
	}
	return f
}

// result is what a run of the CLI left.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// tfk8s runs the CLI in the test's namespace and returns what it did.
func (f *fixture) tfk8s(args ...string) result {
	f.t.Helper()
	return f.tfk8sContext(context.Background(), args...)
}

// tfk8sContext is tfk8s with a context, for commands that wait.
func (f *fixture) tfk8sContext(ctx context.Context, args ...string) result {
	var stdout, stderr testutil.SyncBuffer
	env := cli.Env{
		IOStreams:       genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv:          func(k string) string { return f.env[k] },
		ConfigFile:      "",
		DigestCacheFile: f.digestCache,
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	all := append([]string{"--kubeconfig", cp.Kubeconfig(), "-n", f.ns}, args...)
	code := cli.Main(ctx, all, env)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// mustSucceed fails the test unless the CLI exited 0.
func (f *fixture) mustSucceed(args ...string) result {
	f.t.Helper()
	r := f.tfk8s(args...)
	if r.code != 0 {
		f.t.Fatalf("tfk8s %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// writeTree writes files (name → content) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// getJob reads a job.
func (f *fixture) getJob(name string) *tfv1.TFJob {
	f.t.Helper()
	job := &tfv1.TFJob{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, job); err != nil {
		f.t.Fatalf("reading tfjob %s: %v", name, err)
	}
	return job
}

// waitPods waits until the job has exactly the named pods, and returns them.
func (f *fixture) waitPods(job string, names ...string) map[string]*corev1.Pod {
	f.t.Helper()
	var pods map[string]*corev1.Pod
	testutil.Eventually(f.t, fmt.Sprintf("pods %v", names), func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(f.ns), client.MatchingLabels{tfv1.LabelJobName: job}); err != nil {
			return false, err
		}
		pods = map[string]*corev1.Pod{}
		for i := range list.Items {
			if list.Items[i].Labels[tfjob.LabelRecord] == "" { // the record pod is no replica
				pods[list.Items[i].Name] = &list.Items[i]
			}
		}
		if len(pods) != len(names) {
			return false, nil
		}
		for _, n := range names {
			if pods[n] == nil {
				return false, nil
			}
		}
		return true, nil
	})
	return pods
}

// waitCondition waits until the job's condition typ is True.
func (f *fixture) waitCondition(name string, typ tfv1.JobState) {
	f.t.Helper()
	testutil.Eventually(f.t, fmt.Sprintf("tfjob %s to be %s", name, typ), func(ctx context.Context) (bool, error) {
		job := &tfv1.TFJob{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, job); err != nil {
			return false, err
		}
		for _, c := range job.Status.Conditions {
			if c.Type == string(typ) && c.Status == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}
