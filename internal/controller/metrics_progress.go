package controller

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// jobStepRates is each running job's steps per second, read from the jobs' status in
// the cache when Prometheus scrapes: a job's series goes when it stops running or is
// deleted, with no state kept here, so there are never more series than running jobs.
// Only tfk8s.io jobs have one: kubeflow.org's status has no progress.
var jobStepRates = &jobStepRateCollector{desc: prometheus.NewDesc("tfk8s_job_steps_per_second",
	"Training steps per second of each running TFJob, by the trainer's clock, as its lead replica last reported them.",
	[]string{"namespace", "tfjob"}, nil)}

func init() {
	metrics.Registry.MustRegister(jobStepRates)
}

type jobStepRateCollector struct{ desc *prometheus.Desc }

func (c *jobStepRateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reads the cache that tfk8s_jobs counts (jobStates.use sets it): one cache,
// one hook in the manager.
func (c *jobStepRateCollector) Collect(ch chan<- prometheus.Metric) {
	jobStates.mu.Lock()
	reader := jobStates.reader
	jobStates.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rates, err := runningStepRates(ctx, reader)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, r := range rates {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, r.rate, r.namespace, r.job)
	}
}

type jobStepRate struct {
	namespace, job string
	rate           float64
}

// runningStepRates are the step rates of the running jobs in reader that have one.
func runningStepRates(ctx context.Context, reader client.Reader) ([]jobStepRate, error) {
	list := &tfv1.TFJobList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []jobStepRate
	for i := range list.Items {
		job := &list.Items[i]
		if jobState(&job.Status) != tfv1.JobRunning || job.Status.Progress == nil {
			continue
		}
		rate, err := strconv.ParseFloat(job.Status.Progress.StepsPerSecond, 64)
		if err != nil || math.IsNaN(rate) || math.IsInf(rate, 0) {
			continue
		}
		out = append(out, jobStepRate{job.Namespace, job.Name, rate})
	}
	return out, nil
}
