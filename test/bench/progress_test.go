package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// progressAgentIP is where the benchmark's pods say they are: one server on a
// loopback address of its own plays every lead replica's agent.
const progressAgentIP = "127.0.0.77"

// BenchmarkProgressStatus measures what polling progress costs at 1,000 running jobs
// (10 in a smoke run): each job's lead replica reports a step that moves, so every
// poll (at most one per job every 30 s) writes the job's status. It prints the API
// server's and the controller's CPU seconds and the writes over a window of two
// minutes, as the pod creation benchmark counts them, and reports status writes and
// API server CPU seconds per minute.
func BenchmarkProgressStatus(b *testing.B) {
	ctx := context.Background()
	cp, stop := startControlPlane(b, controlplane.Options{}, false)
	defer stop()
	r := newRig(b, cp)
	polls := serveFakeAgents(b)
	for i := range b.N {
		n := sized(1000, 10)
		ns := namespace(fmt.Sprintf("progress-%d", i))
		if err := r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		waitDefaultServiceAccount(b, r.c, ns)
		seen, err := watchPodCount(ctx, r.cfg, ns, n)
		if err != nil {
			b.Fatal(err)
		}
		r.startController()
		if err := createJobs(ctx, r.c, progressJobs(ns, n)); err != nil {
			b.Fatal(err)
		}
		select {
		case <-seen:
		case <-time.After(10 * time.Minute):
			b.Fatalf("%d pods not created within 10 minutes", n)
		}
		startPods(b, r.c, ns)
		waitAllReporting(b, r.c, ns, n)
		r.settle()

		window := time.Duration(sized(120, 5)) * time.Second
		cpuBefore, requestsBefore, pollsBefore := cpuSeconds(), r.requestCounts(), polls.Load()
		time.Sleep(window) // a rate is measured over a time, not until something happens
		cpuAfter, requestsAfter := cpuSeconds(), r.requestCounts()
		r.ctl.stop()
		minutes := window.Minutes()
		writes := requestsAfter["tfjobs/status patch"] - requestsBefore["tfjobs/status patch"]
		apiCPU := cpuAfter["kube-apiserver"] - cpuBefore["kube-apiserver"]
		fmt.Printf("progress: %d running jobs over %v: %d polls, %.0f status writes\n  CPU seconds meanwhile: %s\n  writes meanwhile: %s\n",
			n, window, polls.Load()-pollsBefore, writes, cpuDelta(cpuBefore, cpuAfter), requestDelta(requestsBefore, requestsAfter))
		fmt.Printf("  per minute: %.0f status writes, %.2f kube-apiserver CPU seconds, %.2f tfk8s-controller CPU seconds\n",
			writes/minutes, apiCPU/minutes, (cpuAfter["tfk8s-controlle"]-cpuBefore["tfk8s-controlle"])/minutes)
		b.ReportMetric(writes/minutes, "status-writes/min")
		b.ReportMetric(apiCPU/minutes, "apiserver-cpu-s/min")
	}
}

// progressJobs are n jobs of one worker that stores artifacts: each worker 0 leads and
// serves its progress.
func progressJobs(ns string, n int) []*tfv1.TFJob {
	jobs := make([]*tfv1.TFJob, n)
	for i := range jobs {
		jobs[i] = testutil.MakeTFJob(fmt.Sprintf("progress-%d", i), ns).Workers(1).
			Artifacts("s3://bench/runs/", "/workspace/logs").Obj()
	}
	return jobs
}

// serveFakeAgents serves every pod's progress on progressAgentIP: a step that moves
// with the clock, out of a known total. It returns the count of polls answered.
func serveFakeAgents(b *testing.B) *atomic.Int64 {
	ln, err := net.Listen("tcp", net.JoinHostPort(progressAgentIP, strconv.Itoa(tfjob.ProgressPort)))
	if err != nil {
		b.Fatalf("playing the agents: %v", err)
	}
	polls, start := &atomic.Int64{}, time.Now()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		polls.Add(1)
		step := int64(time.Since(start).Seconds() * 10)
		_ = json.NewEncoder(w).Encode(tfjob.LiveProgress{Step: step, TotalSteps: 1 << 30, StepsPerSecond: 10,
			Metrics: []tfjob.LiveMetric{{Name: "train/epoch_loss", Value: "0.25"}}})
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return polls
}

// startPods plays the kubelet: every pod of ns Running at progressAgentIP.
func startPods(b *testing.B, c client.Client, ns string) {
	pods := &corev1.PodList{}
	if err := c.List(context.Background(), pods, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	err := inParallel(pods.Items, func(pod corev1.Pod) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(&pod), &pod); err != nil {
				return err
			}
			pod.Status.Phase, pod.Status.PodIP = corev1.PodRunning, progressAgentIP
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
			return c.Status().Update(context.Background(), &pod)
		})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// waitAllReporting waits until every job of ns shows a progress in its status.
func waitAllReporting(b *testing.B, c client.Client, ns string, n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		jobs := &tfv1.TFJobList{}
		if err := c.List(context.Background(), jobs, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		var missing []string
		for _, j := range jobs.Items {
			if j.Status.Progress == nil {
				missing = append(missing, j.Name)
			}
		}
		if len(jobs.Items) == n && len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs without progress after 5 minutes: %s", len(missing), n, strings.Join(missing[:min(5, len(missing))], " "))
		}
		time.Sleep(time.Second)
	}
}
