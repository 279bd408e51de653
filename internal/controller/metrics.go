package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// tfk8s's metrics, served on the manager's metrics endpoint.
var (
	jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_created_total",
		Help: "TFJobs tfk8s started acting on.",
	}, []string{"namespace"})
	jobsSucceeded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_succeeded_total",
		Help: "TFJobs that succeeded.",
	}, []string{"namespace"})
	jobsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_failed_total",
		Help: "TFJobs that failed.",
	}, []string{"namespace"})
	jobsRestarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_restarted_total",
		Help: "Replica restarts after a retryable failure (pod re-creations), by job namespace.",
	}, []string{"namespace"})
	podsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tfk8s_pods_created_total",
		Help: "Pods created by tfk8s.",
	})
	jobStartup = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tfk8s_job_startup_seconds",
		Help:    "Time from a TFJob's creation until every one of its replicas was first Running.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	})
)

func init() {
	metrics.Registry.MustRegister(jobsCreated, jobsSucceeded, jobsFailed, jobsRestarted, podsCreated, jobStartup)
}

func recordJobCreated(namespace string)   { jobsCreated.WithLabelValues(namespace).Inc() }
func recordJobSucceeded(namespace string) { jobsSucceeded.WithLabelValues(namespace).Inc() }
func recordJobFailed(namespace string)    { jobsFailed.WithLabelValues(namespace).Inc() }
func recordRestarts(namespace string, n int32) {
	jobsRestarted.WithLabelValues(namespace).Add(float64(n))
}
func recordPodCreated()                { podsCreated.Inc() }
func recordJobStartup(d time.Duration) { jobStartup.Observe(d.Seconds()) }
