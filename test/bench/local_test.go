package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// pulledIn reads the duration out of the node's Pulled event, "Successfully pulled image
// X in 12.9s (12.9s including waiting). Image size: N bytes."
var pulledIn = regexp.MustCompile(`Successfully pulled image "[^"]+" in ([0-9.]+[a-zµ]+) .*Image size: (\d+) bytes`)

// BenchmarkLocalTensorFlow measures local mode with the TensorFlow image, on a local
// cluster of its own with an empty image cache: (1) the first pod of
// ghcr.io/tfk8s/tensorflow:2.21.0-cpu, its image pulled from the cluster's registry and
// unpacked; (2) submit → every replica Running of a job of 2 PS, 3 workers and a chief
// in that image, once it is cached (goal ≤ 3 s), the median of three rounds.
func BenchmarkLocalTensorFlow(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if os.Geteuid() != 0 {
		b.Fatal("the local cluster needs root: it creates a bridge, network namespaces and mounts")
	}
	opts, st := upBenchCluster(ctx, b, localcluster.Options{PodCIDR: "10.245.0.0/24", Bridge: "tfk8sbench0"})
	cs := newClientset(b, st.Kubeconfig, 0)

	pull, size, firstPod := firstPodOfImage(ctx, b, cs, benchImage())
	var rounds []time.Duration
	for i := range sized(3, 1) {
		rounds = append(rounds, submitToRunning(ctx, b, cs, opts, fmt.Sprintf("bench-%d", i)))
	}
	slices.Sort(rounds)
	med := rounds[len(rounds)/2]
	var each []string
	for _, r := range rounds {
		each = append(each, fmt.Sprintf("%.2f", r.Seconds()))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "local mode, %s (%.1f MB):\n", benchImage(), float64(size)/1e6)
	fmt.Fprintf(&table, "%-62s %8.2f s\n", "image pulled from the local registry and unpacked", pull.Seconds())
	fmt.Fprintf(&table, "%-62s %8.2f s\n", "first pod: created → Succeeded, image pull included", firstPod.Seconds())
	fmt.Fprintf(&table, "%-62s %8.2f s   %s\n", fmt.Sprintf("submit → 6 replicas Running, image cached (median of %d)", len(rounds)),
		med.Seconds(), strings.Join(each, " "))
	fmt.Print("\n" + table.String())
	writeReport(b, "Local mode", "`BenchmarkLocalTensorFlow`, "+time.Now().UTC().Format("2006-01-02")+
		", a local cluster of its own (kubelet "+kubeletVersion(ctx, b, cs)+") with an empty image cache, on "+machine()+
		":\n\n```text\n"+table.String()+"```\n")
	b.ReportMetric(pull.Seconds(), "s-pull-unpack")
	b.ReportMetric(med.Seconds(), "s-submit-to-running")
}

// upBenchCluster brings up a throw-away local cluster with an empty image cache on the
// network opts names, brought down and removed when the benchmark ends. In a smoke run
// the local clusters' benchmarks share the first one's cluster (its start and the
// image's pull are most of each one's smoke run), which TestMain brings down.
func upBenchCluster(ctx context.Context, b *testing.B, opts localcluster.Options) (localcluster.Options, *localcluster.Status) {
	if smoke {
		sharedCluster.once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if sharedCluster.opts, sharedCluster.err = benchClusterOptions(opts); sharedCluster.err == nil {
				sharedCluster.st, sharedCluster.err = localcluster.Up(ctx, sharedCluster.opts)
			}
		})
		if sharedCluster.err != nil {
			b.Fatalf("up: %v", sharedCluster.err)
		}
		return sharedCluster.opts, sharedCluster.st
	}
	opts, err := benchClusterOptions(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := downBenchCluster(opts); err != nil {
			b.Error(err)
		}
	})
	st, err := localcluster.Up(ctx, opts)
	if err != nil {
		b.Fatalf("up: %v", err)
	}
	return opts, st
}

// sharedCluster is the local cluster of a smoke run.
var sharedCluster struct {
	once sync.Once
	opts localcluster.Options
	st   *localcluster.Status
	err  error
}

// benchClusterOptions completes opts, which name the cluster's network, into the options
// of a throw-away local cluster in a directory of its own.
func benchClusterOptions(opts localcluster.Options) (localcluster.Options, error) {
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		return opts, err
	}
	dir, err := os.MkdirTemp("/var/lib", "tfk8s-bench-")
	if err != nil {
		return opts, err
	}
	ports, err := localcluster.FreePorts()
	if err != nil {
		return opts, err
	}
	opts.Dir, opts.BinDir, opts.NodeName, opts.Ports = dir, binDir, "bench-node", ports
	opts.UserConfigFile = filepath.Join(dir, "config")
	opts.UnsafeNoFsync, opts.Timeout = true, 3*time.Minute
	return opts, nil
}

// downBenchCluster brings the cluster of opts down and removes its directory.
func downBenchCluster(opts localcluster.Options) error {
	defer os.RemoveAll(opts.Dir)
	if err := localcluster.Down(context.Background(), opts); err != nil {
		return fmt.Errorf("down: %w", err)
	}
	return nil
}

// newClientset reaches the cluster through kubeconfig at up to qps requests a second,
// in bursts of as many; 0 keeps client-go's defaults, 5 a second in bursts of 10.
func newClientset(b *testing.B, kubeconfig string, qps float32) *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = qps, int(qps)
	return kubernetes.NewForConfigOrDie(cfg)
}

// firstPodOfImage runs a pod of the image that exits at once, and returns the pull time
// the node reported, the image's size and the pod's time from creation to Succeeded.
func firstPodOfImage(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, image string) (pull time.Duration, size int64, total time.Duration) {
	pod := &corev1.Pod{
		// Named after the benchmark: in a smoke run another's may be on the cluster.
		ObjectMeta: metav1.ObjectMeta{Name: "first-" + strings.ToLower(b.Name()), Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: image, Command: []string{"python3", "-c", "pass"}}},
		},
	}
	// Pods are refused until kube-controller-manager has made the default ServiceAccount.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		b.Fatalf("creating pod: %v", err)
	}
	start := time.Now()
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	total = time.Since(start)
	if err != nil || phase != corev1.PodSucceeded {
		b.Fatalf("pod of %s: phase %s (%v)", image, phase, err)
	}
	events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=Pulled"})
	if err != nil || len(events.Items) != 1 {
		b.Fatalf("want one Pulled event of pod %s: %v %v", pod.Name, events, err)
	}
	m := pulledIn.FindStringSubmatch(events.Items[0].Message)
	if m == nil && smoke && strings.Contains(events.Items[0].Message, "already present") {
		return 0, 0, total // the smoke run's shared cluster pulled it for an earlier benchmark
	}
	if m == nil {
		b.Fatalf("the Pulled event says no pull time: %q", events.Items[0].Message)
	}
	pull, err = time.ParseDuration(m[1])
	if err != nil {
		b.Fatal(err)
	}
	fmt.Sscan(m[2], &size)
	return pull, size, total
}

// submitToRunning submits a job of 2 PS, 3 workers and a chief in the TensorFlow image
// through the CLI, returns the time until its 6 pods are Running, and deletes it.
func submitToRunning(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, opts localcluster.Options, name string) time.Duration {
	start := time.Now()
	tfk8s(ctx, b, opts, "submit", "--name", name, "--image", benchImage(), "--ps", "2", "--workers", "3", "--chief", "--", "sleep", "600")
	err := waitRunning(ctx, cs, tfv1.LabelJobName+"="+name, 6)
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s: not 6 pods Running within 2 minutes", name)
	}
	tfk8s(ctx, b, opts, "delete", name, "--wait")
	return took
}

// tfk8s runs the tfk8s command in-process on the cluster of opts, in namespace
// default, and fails b if it fails.
func tfk8s(ctx context.Context, b *testing.B, opts localcluster.Options, args ...string) {
	tfk8sTraced(ctx, b, opts, nil, args...)
}

// tfk8sTraced is tfk8s, its steps told to trace if it is not nil.
func tfk8sTraced(ctx context.Context, b *testing.B, opts localcluster.Options, trace cli.Tracer, args ...string) {
	var out, errOut testutil.SyncBuffer
	env := cli.Env{
		IOStreams:  genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv:     func(string) string { return "" },
		ConfigFile: opts.UserConfigFile,
		Trace:      trace,
	}
	args = append([]string{"--kubeconfig", filepath.Join(opts.Dir, "kubeconfig"), "-n", "default"}, args...)
	if code := cli.Main(ctx, args, env); code != 0 {
		b.Fatalf("tfk8s %s: exit code %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	}
}

// waitRunning waits, at most two minutes, until the pods of namespace default that
// selector selects are n, all Running.
func waitRunning(ctx context.Context, cs *kubernetes.Clientset, selector string, n int) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(pods.Items) != n {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
}

// kubeletVersion is the version the cluster's first node reports, for the report.
func kubeletVersion(ctx context.Context, b *testing.B, cs kubernetes.Interface) string {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(nodes.Items) == 0 {
		b.Fatalf("reading the node's kubelet version: %v (%d nodes)", err, len(nodes.Items))
	}
	return nodes.Items[0].Status.NodeInfo.KubeletVersion
}
