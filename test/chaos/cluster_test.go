package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The chaos cluster has a network of its own, apart from the e2e tests'.
const (
	chaosBridge  = "tfk8schaos0"
	chaosPodCIDR = "10.246.0.0/24"
	namespace    = "default"
)

// cluster is the local cluster of a run.
type cluster struct {
	opts       localcluster.Options
	kubeconfig string
	client     client.Client
	s3         *storage.Client
}

// upCluster starts a local cluster for the test and stops it at the end, keeping the
// components' logs if the test failed.
func upCluster(ctx context.Context, t *testing.T) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("test/chaos must run as root: the local cluster creates a bridge, network namespaces and mounts")
	}
	opts := localcluster.Options{
		Dir:            t.TempDir(),
		BinDir:         binDir(t),
		UserConfigFile: filepath.Join(t.TempDir(), "config"),
		NodeName:       "chaos-node",
		PodCIDR:        chaosPodCIDR,
		Bridge:         chaosBridge,
		Ports:          freePorts(t),
		Timeout:        3 * time.Minute,
		Progress:       testWriter{t},
	}
	c := &cluster{opts: opts}
	t.Cleanup(func() {
		if t.Failed() {
			c.explain(t)
		}
		if err := localcluster.Down(context.Background(), opts); err != nil {
			t.Errorf("down at cleanup: %v", err)
		}
	})
	st, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	c.kubeconfig = st.Kubeconfig
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	if c.s3, err = storage.New(st.S3); err != nil {
		t.Fatal(err)
	}
	return c
}

// up starts whatever component of the cluster is not running.
func (c *cluster) up(ctx context.Context, t *testing.T) {
	t.Helper()
	opts := c.opts
	opts.Progress = nil // a line per component per kill would drown the test's log
	if _, err := localcluster.Up(ctx, opts); err != nil {
		t.Fatalf("starting the cluster's components again: %v", err)
	}
}

// kill sends sig to a component of the cluster and waits until it is gone.
func (c *cluster) kill(t *testing.T, name string, sig syscall.Signal) {
	t.Helper()
	st, err := localcluster.StatusOf(c.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range st.Components {
		if comp.Name != name || !comp.Running() {
			continue
		}
		if err := syscall.Kill(comp.PID, sig); err != nil {
			t.Fatalf("killing %s: %v", name, err)
		}
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return syscall.Kill(comp.PID, 0) != nil, nil
		})
		if err != nil {
			t.Fatalf("%s (pid %d) still runs after %v", name, comp.PID, sig)
		}
		return
	}
	t.Fatalf("%s is not running", name)
}

// cliResult is what a tfk8s command printed and its exit code.
type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// mustTfk8s runs a tfk8s command in-process against the cluster, and fails the test
// if it fails.
func (c *cluster) mustTfk8s(ctx context.Context, t *testing.T, args ...string) cliResult {
	t.Helper()
	var stdout, stderr testutil.SyncBuffer
	env := cli.Env{
		IOStreams:  genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		Getenv:     func(string) string { return "" },
		ConfigFile: c.opts.UserConfigFile,
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	code := cli.Main(ctx, append([]string{"--kubeconfig", c.kubeconfig, "-n", namespace}, args...), env)
	r := cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
	if code != 0 {
		t.Fatalf("tfk8s %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// deleteAndCheckNothingLeft deletes every job and waits until none of their pods,
// Services or Secrets is left. It returns how many were still there at the bound.
func (c *cluster) deleteAndCheckNothingLeft(ctx context.Context, t *testing.T, jobs map[string]string) int {
	t.Helper()
	for name := range jobs {
		c.mustTfk8s(ctx, t, "delete", name)
	}
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		left, err = c.leftOf(ctx, jobs)
		return err == nil && len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("left after every job was deleted: %s", strings.Join(left, ", "))
	}
	return len(left)
}

// leftOf lists the pods, Services and tfk8s Secrets that remain of the jobs.
func (c *cluster) leftOf(ctx context.Context, jobs map[string]string) ([]string, error) {
	var left []string
	pods := &corev1.PodList{}
	if err := c.client.List(ctx, pods, client.InNamespace(namespace), client.HasLabels{tfv1.LabelJobName}); err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Name)
	}
	svcs := &corev1.ServiceList{}
	if err := c.client.List(ctx, svcs, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		if _, ok := jobs[s.Name]; ok {
			left = append(left, "service "+s.Name)
		}
	}
	secrets := &corev1.SecretList{}
	if err := c.client.List(ctx, secrets, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	for _, s := range secrets.Items {
		if madeByTFK8s(s.ObjectMeta) {
			left = append(left, "secret "+s.Name)
		}
	}
	return left, nil
}

// madeByTFK8s reports whether tfk8s made an object: a label of its, or a TFJob owner.
func madeByTFK8s(m metav1.ObjectMeta) bool {
	for k, v := range m.Labels {
		if strings.Contains(k, "tfk8s") || v == "tfk8s" {
			return true
		}
	}
	for _, ref := range m.OwnerReferences {
		if ref.Kind == "TFJob" {
			return true
		}
	}
	return false
}

// explain prints what explains a failure: every job's pods with their phases, the
// cluster's warning events, and the tail of every component's log.
func (c *cluster) explain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.client != nil {
		pods := &corev1.PodList{}
		if err := c.client.List(ctx, pods, client.InNamespace(namespace)); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s: %s %s deleting=%v restarts=%d", p.Name, p.Status.Phase, p.Status.Reason,
					p.DeletionTimestamp != nil, restarts(&p))
			}
		}
		events := &corev1.EventList{}
		if err := c.client.List(ctx, events, client.InNamespace(namespace)); err == nil {
			for _, e := range events.Items {
				if e.Type == corev1.EventTypeWarning || e.Reason == tfv1.ReasonPodNameTaken {
					t.Logf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
				}
			}
		}
	}
	// The components a job's fate goes through; the control plane's own logs are kept
	// in the state directory.
	for _, name := range []string{"tfk8s-controller", "tfk8s-node", "versitygw", "kube-apiserver"} {
		l := filepath.Join(c.opts.Dir, "cluster", name+".log")
		out, _ := exec.Command("tail", "-n", "20", l).Output()
		t.Logf("--- %s (last lines)\n%s", l, out)
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// freePorts picks free ports for the cluster's components.
func freePorts(t *testing.T) localcluster.Ports {
	t.Helper()
	p, err := localcluster.FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testWriter sends the cluster's progress lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
