package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// memoryJobs and memoryReplicas size the memory benchmark: the 5,000 jobs and
// 20,000 pods in the controller's cache.
var memoryJobs = sized(5000, 20)

const memoryReplicas = 4

// BenchmarkControllerMemory prints the peak RSS of bin/tfk8s-controller (a) while it
// creates the 20,000 pods of 5,000 TFJobs of 4 workers, and then after a restart on
// that cluster, once it has read every job and pod and reconciled every job: (b) with
// whole objects in its cache (--cache-full-objects, tfk8s before its cache was
// stripped), (c) with the cache as tfk8s keeps it and Go's default garbage collection,
// and (d) as (c), given a 100 MB memory limit (the goal; the Go runtime then keeps
// 70 MB). The chart's default limit is 512Mi: (d) shows the limit can be lowered to
// 100 MB for a cluster of this size.
func BenchmarkControllerMemory(b *testing.B) {
	ctx := context.Background()
	cp, stop := startControlPlane(b, controlplane.Options{}, false)
	defer stop()
	r := newRig(b, cp)
	for i := range b.N {
		ns := namespace(fmt.Sprintf("memory-%d", i))
		if err := r.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		waitDefaultServiceAccount(b, r.c, ns)
		want := memoryJobs * memoryReplicas
		seen, err := watchPodCount(ctx, r.cfg, ns, want)
		if err != nil {
			b.Fatal(err)
		}
		ctl := startMeasuredController(b, cp, nil)
		start := time.Now()
		if err := createJobs(ctx, r.c, memoryJobsIn(ns)); err != nil {
			b.Fatal(err)
		}
		select {
		case <-seen:
		case <-time.After(20 * time.Minute):
			// A 2-CPU machine shared with other tests took 7 minutes.
			b.Fatalf("%d pods not created within 20 minutes", want)
		}
		created := time.Since(start)
		fmt.Printf("memory: %d TFJobs, %d pods created in %.1fs\n", memoryJobs, want, created.Seconds())
		ctl.waitCaughtUp(b, memoryJobs*(i+1))
		r.settle()
		creating := ctl.peakRSS()
		ctl.stop()

		full := restartedPeakRSS(b, cp, memoryJobs*(i+1), nil, "--cache-full-objects")
		stripped := restartedPeakRSS(b, cp, memoryJobs*(i+1), nil)
		// As the chart would run it with resources.limits.memory: 100M.
		limited := restartedPeakRSS(b, cp, memoryJobs*(i+1), []string{"TFK8S_MEMORY_LIMIT=100000000"})
		mib := func(n int64) float64 { return float64(n) / (1 << 20) }
		var table strings.Builder
		fmt.Fprintf(&table, "%-66s %10s\n", fmt.Sprintf("controller peak RSS, %d TFJobs of %d workers (%d pods)", memoryJobs, memoryReplicas, want), "MiB")
		fmt.Fprintf(&table, "%-66s %10.1f\n", "(a) creating them", mib(creating))
		fmt.Fprintf(&table, "%-66s %10.1f\n", "(b) restarted, whole objects cached (--cache-full-objects)", mib(full))
		fmt.Fprintf(&table, "%-66s %10.1f\n", "(c) restarted, cache as tfk8s keeps it", mib(stripped))
		fmt.Fprintf(&table, "%-66s %10.1f  (%.1f MB)\n", "(d) as (c), in a container limited to 100 MB (the goal)", mib(limited), float64(limited)/1e6)
		fmt.Printf("\n%s\n", table.String())
		writeReport(b, "Controller memory: the last run", "`BenchmarkControllerMemory`, "+time.Now().UTC().Format("2006-01-02")+
			", kube-apiserver "+cp.Version.GitVersion+", on "+machine()+"; the pods were created in "+
			created.Round(time.Second).String()+":\n\n```\n"+table.String()+"```")
		b.ReportMetric(mib(creating), "creating-peak-MiB")
		b.ReportMetric(mib(full), "restarted-full-cache-peak-MiB")
		b.ReportMetric(mib(stripped), "restarted-peak-MiB")
		b.ReportMetric(mib(limited), "restarted-100MB-limit-peak-MiB")
	}
}

// memoryJobsIn are the benchmark's TFJobs in namespace ns.
func memoryJobsIn(ns string) []*tfv1.TFJob {
	jobs := make([]*tfv1.TFJob, memoryJobs)
	for i := range jobs {
		jobs[i] = testutil.MakeTFJob(fmt.Sprintf("mem-%d", i), ns).Workers(memoryReplicas).Obj()
	}
	return jobs
}

// restartedPeakRSS starts the controller with extra environment and flags on the
// populated cluster and returns its peak RSS once it has reconciled every one of the
// jobs.
func restartedPeakRSS(b *testing.B, cp *controlplane.ControlPlane, jobs int, env []string, args ...string) int64 {
	ctl := startMeasuredController(b, cp, env, args...)
	defer ctl.stop()
	start := time.Now()
	ctl.waitCaughtUp(b, jobs)
	fmt.Printf("memory: controller %v caught up with %d TFJobs in %.1fs\n", args, jobs, time.Since(start).Seconds())
	return ctl.peakRSS()
}

// measuredController is the controller process with its metrics served, so the
// benchmark sees when it has reconciled every job.
type measuredController struct {
	*controllerProcess
	metricsURL string
}

func startMeasuredController(b *testing.B, cp *controlplane.ControlPlane, env []string, args ...string) *measuredController {
	ports, err := proc.FreePorts(1)
	if err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	// The later flag wins over startControllerProcess's --metrics-bind-address=0.
	p, err := startControllerProcess(cp, env, append([]string{"--metrics-bind-address=" + addr}, args...)...)
	if err != nil {
		b.Fatal(err)
	}
	return &measuredController{controllerProcess: p, metricsURL: "http://" + addr + "/metrics"}
}

// waitCaughtUp waits, at most 10 minutes, until the controller has reconciled at least
// jobs TFJobs and its work queue is empty.
func (c *measuredController) waitCaughtUp(b *testing.B, jobs int) {
	b.Helper()
	for range 2400 {
		time.Sleep(250 * time.Millisecond)
		reconciled, depth, err := c.progress()
		if err != nil {
			continue // not serving yet
		}
		if reconciled >= float64(jobs) && depth == 0 {
			return
		}
	}
	b.Fatalf("the controller did not reconcile %d TFJobs within 10 minutes", jobs)
}

// progress reads the TFJob controller's reconciles so far and its work queue's depth.
func (c *measuredController) progress() (reconciled, depth float64, err error) {
	resp, err := http.Get(c.metricsURL)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	sum := func(family, label string) float64 {
		var n float64
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == "tfjob" {
					n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
		return n
	}
	return sum("controller_runtime_reconcile_total", "controller"), sum("workqueue_depth", "name"), nil
}
