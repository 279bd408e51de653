package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// BenchmarkKubeflowJobs prints, in one run, the controller (with --kubeflow) creating
// the pods and Services of 1000 kubeflow.org TFJobs of 1 PS + 2 workers, against the
// same 1000 jobs as tfk8s.io TFJobs: each in seconds, in rounds that alternate the two
// on the same API server, and the ratio kubeflow.org / tfk8s.io of the round with the
// median ratio. A Kubeflow job is reconciled through the same model as a tfk8s.io job,
// converted on each read; goal ≤ 1.1.
func BenchmarkKubeflowJobs(b *testing.B) {
	r, stop := newKubeflowRig(b, "kubeflow-warm-up")
	defer stop()
	cp := r.cp
	for range b.N {
		var rounds []pair // raw: tfk8s.io jobs; tfk8s: kubeflow.org jobs
		for i := range kubeflowRounds {
			var p pair
			p.raw = r.measure(fmt.Sprintf("tfk8s-io-%d", i), nil, r.createJobsOf("own", kubeflowJobs, false), 3*kubeflowJobs)
			p.tfk8s = r.measure(fmt.Sprintf("kubeflow-org-%d", i), nil, r.createJobsOf("kf", kubeflowJobs, true), 3*kubeflowJobs)
			rounds = append(rounds, p)
		}
		m := median(rounds)
		var ratios []string
		for _, p := range rounds {
			ratios = append(ratios, fmt.Sprintf("%.2f", p.ratio()))
		}
		var table strings.Builder
		fmt.Fprintf(&table, "%-56s %8s %8s   %s\n", "scenario (the round with the median ratio)", "seconds", "ratio", "every round's ratio")
		fmt.Fprintf(&table, "%-56s %8.2f %8s\n", fmt.Sprintf("%d tfk8s.io TFJobs of 1 PS + 2 workers: %d pods", kubeflowJobs, 3*kubeflowJobs), m.raw.Seconds(), "1.00")
		fmt.Fprintf(&table, "%-56s %8.2f %8.2f   %s\n", "the same jobs as kubeflow.org TFJobs", m.tfk8s.Seconds(), m.ratio(), strings.Join(ratios, " "))
		fmt.Fprintf(&table, "%-56s %8s %8s   goal ≤ 1.1\n", "", "", "")
		fmt.Printf("\n%s\n", table.String())
		writeReport(b, "Kubeflow's TFJob", "`BenchmarkKubeflowJobs`, "+time.Now().UTC().Format("2006-01-02")+
			", kube-apiserver "+cp.Version.GitVersion+" started by internal/controlplane, the controller run with --kubeflow, on "+
			machine()+":\n\n```\n"+table.String()+"```")
		b.ReportMetric(m.ratio(), "ratio-kubeflow-to-tfk8s")
	}
}

// newKubeflowRig starts a control plane serving kubeflow.org TFJobs and the controller
// with --kubeflow, and warms them up in namespace warm: 300 small jobs. stop stops the
// controller, unless the caller has, and the control plane.
func newKubeflowRig(b *testing.B, warm string) (r *rig, stop func()) {
	cp, stopCP := startControlPlane(b, controlplane.Options{}, true)
	stop = func() {
		if r != nil && r.ctl != nil {
			r.ctl.stop()
		}
		stopCP()
	}
	r = newRig(b, cp)
	var err error
	if r.ctl, err = startControllerProcess(cp, nil, "--kubeflow"); err != nil {
		stop()
		b.Fatal(err)
	}
	r.measure(warm, nil, r.createJobsOf("warm", sized(300, 3), false), 3*sized(300, 3))
	return r, stop
}

// kubeflowRounds is how many times each side of BenchmarkKubeflowJobs is measured, and
// kubeflowJobs how many jobs each side creates.
var (
	kubeflowRounds = sized(3, 1)
	kubeflowJobs   = sized(1000, 10)
)

// createJobsOf creates n TFJobs of 1 PS + 2 workers, kubeflow.org ones or tfk8s.io
// ones of the same spec, 32 at a time, and waits for their Services.
func (r *rig) createJobsOf(prefix string, n int, kf bool) func(ns string) error {
	return func(ns string) error {
		own := smallJobs(ns)[:n]
		objs := make([]client.Object, n)
		for i, job := range own {
			job.Name = fmt.Sprintf("%s-%d", prefix, i)
			objs[i] = job
			if kf {
				objs[i] = kubeflowJob(job)
			}
		}
		if err := createParallel(context.Background(), r.c, objs); err != nil {
			return err
		}
		return r.waitServices(ns, n)
	}
}

// kubeflowJob is job as a kubeflow.org TFJob of the same spec.
func kubeflowJob(job *tfv1.TFJob) client.Object {
	kf := kubeflow.FromModel(job)
	kf.SetGroupVersionKind(kubeflow.GVK)
	return kf
}
