package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The upstream node's side by side: the same six replicas as a kubeflow.org TFJob, run
// (C) by tfk8s (local mode serves kubeflow.org and runs the controller with --kubeflow)
// and then (D) by training-operator v1.9.4 once tfk8s-controller is stopped.

// operatorRounds6 runs rounds of (C) under tfk8s, stops local mode's tfk8s-controller,
// starts training-operator on namespace default, runs as many rounds of (D), stops it
// and starts tfk8s-controller again.
func operatorRounds6(ctx context.Context, b *testing.B, cs *kubernetes.Clientset, opts localcluster.Options, st *localcluster.Status) (tfk8s, operator []startRound) {
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	rounds := sized(3, 1)
	for i := range rounds {
		tfk8s = append(tfk8s, kubeflowToStarted(ctx, b, c, cs, fmt.Sprintf("kf-tfk8s-%d", i)))
	}
	stopLocalController(b, st)
	op := startOperator(b, c, st.Kubeconfig, "default")
	for i := range rounds {
		operator = append(operator, kubeflowToStarted(ctx, b, c, cs, fmt.Sprintf("kf-operator-%d", i)))
	}
	op.Stop()
	// local up starts what is stopped: the cluster is left as found, for a smoke run's
	// next benchmark on it.
	if _, err := localcluster.Up(ctx, opts); err != nil {
		b.Fatalf("local up after training-operator: %v", err)
	}
	return tfk8s, operator
}

// kubeflowToStarted creates a kubeflow.org TFJob of 2 PS, 3 workers and a chief running
// startCommand, returns the time until its 6 pods were Running and until the last
// command had started, and deletes it.
func kubeflowToStarted(ctx context.Context, b *testing.B, c client.Client, cs *kubernetes.Clientset, name string) startRound {
	selector := kubeflowv1.LabelJobName + "=" + name
	trace, stop := startTrace(ctx, b, cs, selector, name+"-")
	job := kubeflowJob(sixReplicaJob(name))
	if err := c.Create(ctx, job); err != nil {
		b.Fatalf("creating %s: %v", name, err)
	}
	r := timeToStarted(ctx, b, cs, selector, trace.start)
	stop()
	r.trace = trace.rows(nil, r.starts)
	if err := c.Delete(ctx, job, client.PropagationPolicy("Background")); err != nil {
		b.Fatalf("deleting %s: %v", name, err)
	}
	waitGone(ctx, b, cs, selector)
	return r
}

// sixReplicaJob is the job of (A) as a user writes it for training-operator: its
// containers named tensorflow, never restarted.
func sixReplicaJob(name string) *tfv1.TFJob {
	job := testutil.MakeTFJob(name, "default").PS(2).Workers(3).Chief().Obj()
	for _, spec := range job.Spec.TFReplicaSpecs {
		spec.RestartPolicy = tfv1.RestartPolicyNever
		pod := &spec.Template.Spec
		pod.TerminationGracePeriodSeconds = new(int64)
		pod.Containers[0].Image = benchImage()
		pod.Containers[0].Command = []string{"python3", "-c", startCommand}
	}
	return job
}

// stopLocalController stops local mode's tfk8s-controller and waits, up to 30 s, until
// it has exited, so that training-operator alone reconciles kubeflow.org jobs.
func stopLocalController(b *testing.B, st *localcluster.Status) {
	pid := 0
	for _, comp := range st.Components {
		if comp.Name == "tfk8s-controller" {
			pid = comp.PID
		}
	}
	if pid == 0 {
		b.Fatal("no tfk8s-controller runs on the local cluster")
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		b.Fatalf("stopping tfk8s-controller: %v", err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !processRuns(pid), nil
	})
	if err != nil {
		b.Fatalf("tfk8s-controller (pid %d) still running 30 s after SIGTERM", pid)
	}
}

// processRuns says whether pid runs: it exists and is not a zombie, which it stays
// until its parent (this benchmark, when it started the cluster) reaps it.
func processRuns(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// operatorRows are the side by side's rows of BenchmarkUpstreamNode's table.
func operatorRows(tfk8s, operator []startRound) [][4]string {
	c, d := medianOf(tfk8s, startedTime), medianOf(operator, startedTime)
	return [][4]string{
		{"(C) kubeflow.org TFJob, tfk8s → 6 commands started", fmt.Sprintf("%.2f s", c.Seconds()), seconds(tfk8s, startedTime), ""},
		{"(C) kubeflow.org TFJob, tfk8s → 6 pods Running", fmt.Sprintf("%.2f s", medianOf(tfk8s, runningTime).Seconds()), seconds(tfk8s, runningTime), ""},
		{"(D) the same, training-operator v1.9.4 → 6 commands started", fmt.Sprintf("%.2f s", d.Seconds()), seconds(operator, startedTime), ""},
		{"(D) the same, training-operator v1.9.4 → 6 pods Running", fmt.Sprintf("%.2f s", medianOf(operator, runningTime).Seconds()), seconds(operator, runningTime), ""},
		{"C / D, commands started", fmt.Sprintf("%.2f ×", c.Seconds()/d.Seconds()), ratios(tfk8s, operator), "≤ 1.0 ×"},
	}
}
