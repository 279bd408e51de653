package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// startCommand is every replica's command: it prints when it started, by the host's
// clock, which the benchmark reads back from the pod's log.
const startCommand = "import time; print('started', time.time(), flush=True); time.sleep(600)"

// startedLine is startCommand's line in a pod's log.
var startedLine = regexp.MustCompile(`(?m)^started ([0-9.]+)$`)

// replicaNames are the six replicas of a job of 2 PS, 3 workers and a chief, which the
// raw pods are named after.
var replicaNames = []string{"ps-0", "ps-1", "worker-0", "worker-1", "worker-2", "chief-0"}

// labelRound selects the raw pods of one round.
const labelRound = "bench.tfk8s.io/round"

// startRound is one round's times from its start: until its 6 pods were Running, and
// until the last of their commands had started.
// starts holds each command's start by pod, and trace the round's milestones.
type startRound struct {
	running, started time.Duration
	starts           map[string]time.Time
	trace            []milestone
}

// BenchmarkUpstreamNode measures, on a local cluster of one upstream node (kubelet,
// containerd), (A) tfk8s submit → every command started of a job of 2 PS, 3 workers and
// a chief in the TensorFlow image, against (B) the same six containers created as raw
// pods, in alternate rounds, three each, once the image is cached; then the same job as
// a kubeflow.org TFJob, (C) under tfk8s and (D) under training-operator, three rounds
// each. Goals: A ≤ 1.3 × B, submit → 6 pods Running ≤ 1.5 s, and C no slower than D.
func BenchmarkUpstreamNode(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if os.Geteuid() != 0 {
		b.Fatal("the local cluster needs root: it creates a bridge, network namespaces and mounts")
	}
	// A network no test uses (the node's and its pods', 10.237.0-1.x), so that it runs
	// beside the e2e tests' clusters.
	opts, st := upBenchCluster(ctx, b, localcluster.Options{PodCIDR: "10.237.0.0/24", Bridge: "tfk8sbenchu0"})
	// The polls for Running take a request each: at client-go's default 5 a second
	// they would see Running 200 ms late at worst, at 20, 50 ms.
	cs := newClientset(b, st.Kubeconfig, 20)
	// B's pods are created by a client of their own, as submit's are by the CLI's, so
	// that the polls' requests do not delay them.
	creator := newClientset(b, st.Kubeconfig, 0)

	pull, size, firstPod := firstPodOfImage(ctx, b, cs, benchImage())
	var job, raw []startRound
	for i := range sized(3, 1) {
		job = append(job, submitToStarted(ctx, b, cs, opts, fmt.Sprintf("job-%d", i)))
		raw = append(raw, podsToStarted(ctx, b, cs, creator, fmt.Sprintf("raw-%d", i)))
	}
	kfTFK8s, kfOperator := operatorRounds6(ctx, b, cs, opts, st)

	jobStarted, rawStarted := medianOf(job, startedTime), medianOf(raw, startedTime)
	jobRunning, rawRunning := medianOf(job, runningTime), medianOf(raw, runningTime)
	ratio := jobStarted.Seconds() / rawStarted.Seconds()
	rows := [][4]string{
		{fmt.Sprintf("image pulled from the local registry and unpacked (%.1f MB)", float64(size)/1e6), fmt.Sprintf("%.2f s", pull.Seconds()), "", ""},
		{"first pod: created → Succeeded, image pull included", fmt.Sprintf("%.2f s", firstPod.Seconds()), "", ""},
		{"(A) tfk8s submit → 6 commands started", fmt.Sprintf("%.2f s", jobStarted.Seconds()), seconds(job, startedTime), ""},
		{"(A) tfk8s submit → 6 pods Running", fmt.Sprintf("%.2f s", jobRunning.Seconds()), seconds(job, runningTime), "≤ 1.5 s"},
		{"(B) 6 raw pods created → 6 commands started", fmt.Sprintf("%.2f s", rawStarted.Seconds()), seconds(raw, startedTime), ""},
		{"(B) 6 raw pods created → 6 pods Running", fmt.Sprintf("%.2f s", rawRunning.Seconds()), seconds(raw, runningTime), ""},
		{"A / B, commands started", fmt.Sprintf("%.2f ×", ratio), ratios(job, raw), "≤ 1.3 ×"},
	}
	rows = append(rows, operatorRows(kfTFK8s, kfOperator)...)
	table := fmt.Sprintf("| %s | median | rounds, in run order | goal |\n|---|---:|---|---|\n", benchImage())
	fmt.Printf("\nupstream node, %s; medians of 3 rounds, then each round:\n", benchImage())
	for _, r := range rows {
		table += "| " + strings.Join(r[:], " | ") + " |\n"
		fmt.Println(strings.TrimRight(fmt.Sprintf("%-62s %8s   %-16s %s", r[0], r[1], r[2], r[3]), " "))
	}
	var jobTraces, rawTraces [][]milestone
	for i := range job {
		jobTraces, rawTraces = append(jobTraces, job[i].trace), append(rawTraces, raw[i].trace)
	}
	traces := traceTable(jobTraces, rawTraces)
	fmt.Printf("\nwhere the time goes, medians of each row:\n%s", traces)
	b.ReportMetric(pull.Seconds(), "s-pull-unpack")
	b.ReportMetric(jobStarted.Seconds(), "s-submit-to-started")
	b.ReportMetric(jobRunning.Seconds(), "s-submit-to-running")
	b.ReportMetric(rawStarted.Seconds(), "s-pods-to-started")
	b.ReportMetric(ratio, "ratio-submit-to-pods")
	writeReport(b, "Upstream node: submit to commands started", "`BenchmarkUpstreamNode`, "+time.Now().UTC().Format("2006-01-02")+
		", one upstream node (kubelet, containerd) of a local cluster, on "+machine()+
		", beside other local clusters: timings are noisy. Rounds alternate A and B; "+
		"each command prints `time.time()` first, and \"started\" is the latest of the six.\n\n"+table+
		"\nWhere the time goes: each round traced from its start (the CLI's first line, or the raw pods' "+
		"creation), each row the median over the rounds. *(watch)* rows are when a watch of the pods saw it, "+
		"after the kubelet reported it; first and last are over the six pods.\n\n"+traces)
}

// submitToStarted submits a job of 2 PS, 3 workers and a chief running startCommand
// through the CLI, returns the time until its 6 pods were Running and until the last
// command had started, and deletes it.
func submitToStarted(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, opts localcluster.Options, name string) startRound {
	selector := tfv1.LabelJobName + "=" + name
	trace, stop := startTrace(ctx, b, cs, selector, name+"-")
	tfk8sTraced(ctx, b, opts, trace.cliStep, "submit", "--name", name, "--image", benchImage(), "--ps", "2", "--workers", "3", "--chief", "--", "python3", "-c", startCommand)
	r := timeToStarted(ctx, b, cs, selector, trace.start)
	stop()
	r.trace = trace.rows(agentStarts(ctx, cs, selector), r.starts)
	tfk8s(ctx, b, opts, "delete", name, "--wait")
	waitGone(ctx, b, cs, selector)
	return r
}

// podsToStarted creates the six replicas' containers as raw pods, in parallel through
// creator, returns the time until they were Running and until the last command had
// started, and deletes them.
func podsToStarted(ctx context.Context, b *testing.B, cs, creator *kubernetes.Clientset, name string) startRound {
	selector := labelRound + "=" + name
	pods := creator.CoreV1().Pods("default")
	errs := make([]error, len(replicaNames))
	var wg sync.WaitGroup
	trace, stop := startTrace(ctx, b, cs, selector, name+"-")
	start := trace.start
	for i, replica := range replicaNames {
		wg.Go(func() { _, errs[i] = pods.Create(ctx, rawPod(name, replica), metav1.CreateOptions{}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("creating the pods of %s: %v", name, err)
	}
	r := timeToStarted(ctx, b, cs, selector, start)
	stop()
	r.trace = trace.rows(nil, r.starts)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: selector}); err != nil {
		b.Fatalf("deleting the pods of %s: %v", name, err)
	}
	waitGone(ctx, b, cs, selector)
	return r
}

// rawPod is one replica's container as a pod of its own.
func rawPod(round, replica string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: round + "-" + replica, Namespace: "default", Labels: map[string]string{labelRound: round}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []corev1.Container{{Name: "tensorflow", Image: benchImage(), Command: []string{"python3", "-c", startCommand}}},
		},
	}
}

// timeToStarted waits until the 6 pods selector selects are Running, then until each
// has logged its start, and returns both times from start. It logs when each command
// started, for a look at where the time went.
func timeToStarted(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, selector string, start time.Time) startRound {
	err := waitRunning(ctx, cs, selector, len(replicaNames))
	running := time.Since(start)
	if err != nil {
		b.Fatalf("%s: not %d pods Running within 2 minutes", selector, len(replicaNames))
	}
	started := commandStarts(ctx, b, cs, selector)
	r := startRound{running: running, starts: started}
	var each []string
	for _, pod := range slices.Sorted(maps.Keys(started)) {
		r.started = max(r.started, started[pod].Sub(start))
		each = append(each, fmt.Sprintf("%s %.2f s", pod, started[pod].Sub(start).Seconds()))
	}
	b.Logf("%s, from %s: 6 Running after %.2f s; commands started after %s", selector, start.Format("15:04:05.000"), running.Seconds(), strings.Join(each, ", "))
	return r
}

// commandStarts reads the logs of the pods selector selects, for at most a minute,
// until each has printed startCommand's line, and returns the times printed by pod.
func commandStarts(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, selector string) map[string]time.Time {
	started := map[string]time.Time{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if _, ok := started[p.Name]; ok {
				continue
			}
			log, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			m := startedLine.FindSubmatch(log)
			if err != nil || m == nil {
				continue
			}
			sec, err := strconv.ParseFloat(string(m[1]), 64)
			if err != nil {
				return false, fmt.Errorf("pod %s printed %q: %w", p.Name, m[0], err)
			}
			started[p.Name] = time.Unix(0, int64(sec*1e9))
		}
		return len(started) == len(replicaNames), nil
	})
	if err != nil {
		b.Fatalf("%s: %d of %d commands logged their start within a minute: %v", selector, len(started), len(replicaNames), err)
	}
	return started
}

// waitGone waits, at most two minutes, until no pod of namespace default is selected
// by selector, so that one round's pods do not share the node with the next's.
func waitGone(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, selector string) {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(pods.Items) == 0, nil
	})
	if err != nil {
		b.Fatalf("%s: pods still there after 2 minutes", selector)
	}
}

func startedTime(r startRound) time.Duration { return r.started }
func runningTime(r startRound) time.Duration { return r.running }

// medianOf is the median of what of rounds.
func medianOf(rounds []startRound, what func(startRound) time.Duration) time.Duration {
	var ds []time.Duration
	for _, r := range rounds {
		ds = append(ds, what(r))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// seconds lists what of each round, in run order.
func seconds(rounds []startRound, what func(startRound) time.Duration) string {
	var s []string
	for _, r := range rounds {
		s = append(s, fmt.Sprintf("%.2f", what(r).Seconds()))
	}
	return strings.Join(s, " ")
}

// ratios lists each round's A / B of commands started, A's round against the B round
// that followed it.
func ratios(job, raw []startRound) string {
	var s []string
	for i := range job {
		s = append(s, fmt.Sprintf("%.2f", job[i].started.Seconds()/raw[i].started.Seconds()))
	}
	return strings.Join(s, " ")
}
