// Package localcluster tests the life cycle of local mode's state directory on real
// clusters without a node: etcd, the control plane, the registry, DNS, S3 and the
// controller from bin/, on a bridge and ports of their own so that they run beside
// other clusters. It needs root and Linux, as tfk8s local does.
package localcluster

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The test clusters' network: neither the default one nor e2e's (10.249.0.0/24).
const (
	testBridge  = "tfk8sdel0"
	testPodCIDR = "10.238.0.0/24"
)

// TestDeleteMakesTheNextUpNew brings a cluster up, stores an object in its etcd, runs
// `tfk8s local delete --dir` as a user does, and checks that the state directory is
// gone and the next up makes a new cluster: another CA, other S3 keys, an empty etcd,
// and the user's config file following it.
func TestDeleteMakesTheNextUpNew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := testOptions(t)

	first := upForTest(ctx, t, opts)
	firstCA := clusterCA(t, first.Kubeconfig)
	cs := clientsetFor(t, first.Kubeconfig)
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-delete", Namespace: "default"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runTfk8s(ctx, "local", "delete", "--dir", opts.Dir)
	t.Logf("tfk8s local delete:\n%s%s", stderr, stdout)
	want := "Deleted the local cluster in " + opts.Dir + ": removed cluster, cluster.yaml, kubeconfig, registry, registry-credentials, s3, s3-iam, s3.yaml ("
	if code != 0 || !strings.HasPrefix(stdout, want) {
		t.Fatalf("local delete: exit %d, stdout %q; want it to start with %q", code, stdout, want)
	}
	if _, err := os.Lstat(opts.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after delete, the state directory: %v; want it gone", err)
	}
	if st, err := localcluster.StatusOf(opts); err != nil || !st.Stopped() {
		t.Fatalf("after delete: status %+v, %v; want nothing running", st, err)
	}

	second := upForTest(ctx, t, opts)
	if bytes.Equal(clusterCA(t, second.Kubeconfig), firstCA) {
		t.Error("after delete, up kept the CA; want a new one")
	}
	if second.S3.AccessKeyID == first.S3.AccessKeyID || second.S3.SecretAccessKey == first.S3.SecretAccessKey {
		t.Errorf("after delete, up kept S3 key %s; want new keys", first.S3.AccessKeyID)
	}
	_, err := clientsetFor(t, second.Kubeconfig).CoreV1().ConfigMaps("default").Get(ctx, marker.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("after delete, ConfigMap %s: %v; want it not found in the new etcd", marker.Name, err)
	}
	checkUserConfigFollows(ctx, t, opts.UserConfigFile, first, second)
}

// checkUserConfigFollows: the user's config, which the first up wrote, holds the
// second cluster's keys after the second up, and they reach its bucket.
func checkUserConfigFollows(ctx context.Context, t *testing.T, path string, first, second *localcluster.Status) {
	t.Helper()
	if first.UserConfigOutcome != localcluster.UserConfigCreated || second.UserConfigOutcome != localcluster.UserConfigUpdated {
		t.Errorf("user config: %s by the first up, %s by the second; want %s, then %s", first.UserConfigOutcome,
			second.UserConfigOutcome, localcluster.UserConfigCreated, localcluster.UserConfigUpdated)
	}
	cfg, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg != second.S3 {
		t.Errorf("user config after the second up: key %s at %s; want the new cluster's %s", cfg.AccessKeyID, cfg.Endpoint, second.S3.AccessKeyID)
	}
	c, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBucket(ctx, cfg.Bucket); err != nil {
		t.Errorf("the user config's keys: %v", err)
	}
}

// testOptions are a cluster's options in a temporary directory, on free ports, with a
// user config file of its own; the cluster is brought down when the test ends.
func testOptions(t *testing.T) localcluster.Options {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("test/integration/localcluster must run as root: the local cluster creates a bridge")
	}
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	progress := &testutil.SyncBuffer{}
	opts := localcluster.Options{
		Dir:            filepath.Join(t.TempDir(), "local"),
		BinDir:         binDir,
		Bridge:         testBridge,
		PodCIDR:        testPodCIDR,
		WithoutNode:    true,
		UserConfigFile: filepath.Join(t.TempDir(), "config"),
		Ports:          ports,
		Timeout:        3 * time.Minute,
		Progress:       progress,
		UnsafeNoFsync:  true,
	}
	t.Cleanup(func() {
		if err := localcluster.Down(context.Background(), opts); err != nil {
			t.Errorf("down at cleanup: %v", err)
		}
		if t.Failed() {
			t.Logf("progress:\n%s", progress.String())
		}
	})
	return opts
}

// upForTest brings the cluster of opts up.
func upForTest(ctx context.Context, t *testing.T, opts localcluster.Options) *localcluster.Status {
	t.Helper()
	start := time.Now()
	st, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %v", time.Since(start).Round(time.Millisecond))
	return st
}

// runTfk8s runs the tfk8s command in-process, as a user's shell would.
func runTfk8s(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	env := cli.Env{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv: func(string) string { return "" }}
	code = cli.Main(ctx, args, env)
	return out.String(), errOut.String(), code
}

// clusterCA is the CA certificate the kubeconfig trusts.
func clusterCA(t *testing.T, kubeconfig string) []byte {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.CAData
}

// clientsetFor reaches the cluster through kubeconfig.
func clientsetFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
