// Package dashboard tests tfk8s dashboard in a real headless Chromium against a real
// control plane, with the TFJob controller running in-process. The dashboard runs
// in-process through cli.Main, as a user would start it; there is no kubelet, so a
// test plays it by binding pods and writing their status.
package dashboard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

var (
	cp        *controlplane.ControlPlane
	k8sClient client.Client
	clientset kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(testutil.RunSuite(m, controlplane.Options{}, setUp))
}

// setUp runs the controller for the whole package, so that jobs get pods.
func setUp(s *testutil.Suite) (func() error, error) {
	cp, k8sClient = s.ControlPlane, s.Client
	var err error
	if clientset, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, fmt.Errorf("creating clientset: %w", err)
	}
	cfg := *cp.Config
	mgr, err := controller.NewManager(&cfg, controller.ManagerOptions{MetricsBindAddress: "0", HealthProbeBindAddress: "0", SkipNameValidation: true})
	if err != nil {
		return nil, fmt.Errorf("creating controller: %w", err)
	}
	return testutil.StartManager(mgr), nil
}

// dashboardURL matches the line tfk8s dashboard prints once it listens.
var dashboardURL = regexp.MustCompile(`Dashboard: (http://\S+/)\n`)

// startDashboard runs tfk8s dashboard (with args) on a free port until the test ends
// and returns its URL, without the trailing slash, and its error stream (the audit
// log).
func startDashboard(t *testing.T, namespace string, args ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	return startDashboardWithEnv(t, namespace, nil, args...)
}

// startDashboardWithEnv is startDashboard with environment variables (NAME=value).
func startDashboardWithEnv(t *testing.T, namespace string, vars []string, args ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	var stdout, stderr testutil.SyncBuffer
	getenv := func(name string) string {
		for _, kv := range vars {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
	env := cli.Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}, Getenv: getenv}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	all := append([]string{"--kubeconfig", cp.Kubeconfig(), "-n", namespace, "dashboard", "--address", "127.0.0.1:0"}, args...)
	go func() { done <- cli.Main(ctx, all, env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("tfk8s dashboard exited %d:\n%s", code, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Errorf("tfk8s dashboard still runs 15 s after its context ended")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := dashboardURL.FindStringSubmatch(stdout.String()); m != nil {
			return strings.TrimSuffix(m[1], "/"), &stderr
		}
		select {
		case code := <-done:
			t.Fatalf("tfk8s dashboard exited %d before listening:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("tfk8s dashboard printed no URL in 30 s; stdout %q, stderr %q", stdout.String(), stderr.String())
	return "", nil
}

// screenshotDir is where the tests put their screenshots: $TFK8S_SCREENSHOTS if set
// (to keep them for the docs), else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("TFK8S_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

func screenshotPath(t *testing.T, name string) string {
	return filepath.Join(screenshotDir(t), name)
}
