package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// BenchmarkTrainingOperator prints, in one run on one API server, the time from a
// 1,001-replica TFJob's creation (1 PS + 1000 workers, no agent) until its 1001 pods
// exist: (t) a tfk8s.io TFJob under tfk8s, (k) the same job as a kubeflow.org TFJob
// under tfk8s (--kubeflow), then (o) the kubeflow.org job under Kubeflow's
// training-operator v1.9.4 with its default client rate (20 requests a second, bursts
// of 30, as its Deployment runs it) and (o+) with the rate this rig's clients have.
// tfk8s runs first, in rounds, then stops: training-operator watches its own
// namespace alone, so neither touches the other's jobs. Goal: (o) ≥ 10× (k).
func BenchmarkTrainingOperator(b *testing.B) {
	r, stop := newKubeflowRig(b, "to-warm-up")
	defer stop()
	cp := r.cp
	want := int(operatorWorkers) + 1
	for n := range b.N {
		var own, kf []time.Duration
		for i := range operatorRounds {
			own = append(own, r.measure(fmt.Sprintf("to-tfk8s-io-%d-%d", n, i), nil, r.createOperatorJob(false), want))
			kf = append(kf, r.measure(fmt.Sprintf("to-kubeflow-org-%d-%d", n, i), nil, r.createOperatorJob(true), want))
		}
		r.ctl.stop()
		r.ctl = nil
		slow := r.measureOperator(fmt.Sprintf("to-operator-%d", n), want)
		var fast time.Duration // not in a smoke run: the same code, and a start of the operator less
		if !smoke {
			fast = r.measureOperator(fmt.Sprintf("to-operator-qps-%d", n), want, "--kube-api-qps=5000", "--kube-api-burst=5000")
		}
		table := operatorTable(want, own, kf, slow, fast)
		fmt.Printf("\n%s\n", table)
		writeReport(b, "Side by side with training-operator: a 1,001-replica job", "`BenchmarkTrainingOperator`, "+
			time.Now().UTC().Format("2006-01-02")+", kube-apiserver "+cp.Version.GitVersion+
			" started by internal/controlplane (no kubelet: pods created, not run), on "+machine()+":\n\n```\n"+table+"```\n\n"+operatorNotes)
		b.ReportMetric(slow.Seconds()/medianDuration(kf).Seconds(), "ratio-operator-to-tfk8s")
		if n+1 < b.N {
			r.startController()
		}
	}
}

// operatorRounds is how many times BenchmarkTrainingOperator measures tfk8s's side, and
// operatorWorkers the workers of its job (with 1 PS).
var (
	operatorRounds  = sized(3, 1)
	operatorWorkers = sized[int32](1000, 10)
)

// createOperatorJob creates the benchmark's job, a kubeflow.org TFJob or a tfk8s.io one
// of the same spec.
func (r *rig) createOperatorJob(kf bool) func(ns string) error {
	return func(ns string) error {
		var obj client.Object = testutil.MakeTFJob("big", ns).PS(1).Workers(operatorWorkers).Obj()
		if kf {
			obj = kubeflowJob(obj.(*tfv1.TFJob))
		}
		return r.c.Create(context.Background(), obj)
	}
}

// measureOperator starts training-operator with args on the namespace of scenario name,
// measures its job there, and stops it.
func (r *rig) measureOperator(name string, want int, args ...string) time.Duration {
	op := startOperator(r.b, r.c, r.cp.Kubeconfig(), namespace(name), args...)
	defer op.Stop()
	return r.measure(name, nil, r.createOperatorJob(true), want)
}

// operatorTable prints the medians of tfk8s's rounds and training-operator's times,
// each also as a ratio to tfk8s's kubeflow.org job.
func operatorTable(want int, own, kf []time.Duration, slow, fast time.Duration) string {
	k := medianDuration(kf)
	var w strings.Builder
	row := func(name string, d time.Duration, rounds []time.Duration) {
		var all []string
		for _, x := range rounds {
			all = append(all, fmt.Sprintf("%.2f", x.Seconds()))
		}
		line := fmt.Sprintf("%-64s %8.2f %8.2f   %s", name, d.Seconds(), d.Seconds()/k.Seconds(), strings.Join(all, " "))
		fmt.Fprintln(&w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(&w, "TFJob of 1 PS + %d workers, created → %d pods exist    %8s %8s   %s\n", want-1, want, "seconds", "ratio", "every round")
	row("(t) tfk8s.io TFJob, tfk8s, median of the rounds", medianDuration(own), own)
	row("(k) kubeflow.org TFJob, tfk8s --kubeflow, median", k, kf)
	row("(o) kubeflow.org TFJob, training-operator v1.9.4, 20 QPS", slow, nil)
	if fast > 0 {
		row("(o+) the same, training-operator --kube-api-qps=5000", fast, nil)
	}
	fmt.Fprintf(&w, "%-64s %8s %8s   goal (o) ≥ 10× (k)\n", "", "", "")
	return w.String()
}

// medianDuration is the median of ds.
func medianDuration(ds []time.Duration) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}

// operatorNotes follows BenchmarkTrainingOperator's table in docs/benchmarks.md.
const operatorNotes = `training-operator creates a job's pods one after another, each create waiting
for the one before (its ReconcilePods loop), through a client limited to 20 requests a second (bursts of 30):
its Deployment sets neither --kube-api-qps nor --kube-api-burst. tfk8s creates them 32
at a time. (o) is training-operator as installed; (o+) lifts its client's limit to the
rig's, to show what is left once the rate limit is gone: its serial creates. tfk8s runs
its rounds first and is stopped before training-operator starts, which watches its own
namespace alone; training-operator so meets an API server that holds tfk8s's rounds'
jobs and pods as well. Ratios are to (k).`
