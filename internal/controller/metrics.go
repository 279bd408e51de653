package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// tfk8s's metrics, served on the manager's metrics endpoint beside controller-runtime's
// (controller_runtime_reconcile_time_seconds, workqueue_depth) and Go's (process_*).
var (
	jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_created_total",
		Help: "TFJobs tfk8s started acting on, by namespace and API group (tfk8s.io, kubeflow.org).",
	}, []string{"namespace", "group"})
	jobsSucceeded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_succeeded_total",
		Help: "TFJobs that succeeded, by namespace and API group (tfk8s.io, kubeflow.org).",
	}, []string{"namespace", "group"})
	jobsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_failed_total",
		Help: "TFJobs that failed, by namespace and API group (tfk8s.io, kubeflow.org).",
	}, []string{"namespace", "group"})
	jobsRestarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_jobs_restarted_total",
		Help: "Replica restarts after a retryable failure (pod re-creations), by job namespace and API group.",
	}, []string{"namespace", "group"})
	podsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tfk8s_pods_created_total",
		Help: "Pods created by tfk8s.",
	})
	jobStartup = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tfk8s_job_startup_seconds",
		Help:    "Time from a TFJob's creation until every one of its replicas was first Running.",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	})
	podCreateDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tfk8s_pod_create_duration_seconds",
		Help:    "Time the API server took to create a pod for tfk8s, failed creations included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	})
	replicaRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tfk8s_replica_restarts_total",
		Help: "Replicas re-created after their pod failed or was disrupted, by the pod's reason (Error, OOMKilled, Evicted, ...; Disrupted when it gives none).",
	}, []string{"reason"})
	gangWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tfk8s_gang_wait_seconds",
		Help:    "Time from a TFJob's creation until every one of its pods was first bound to a node, by gang scheduler (none for jobs without one).",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 14),
	}, []string{"gang"})
)

func init() {
	metrics.Registry.MustRegister(jobsCreated, jobsSucceeded, jobsFailed, jobsRestarted, podsCreated, jobStartup,
		podCreateDuration, replicaRestarts, gangWait, jobStates)
}

// The per-job counters are labelled with the job's namespace and its API group
// (tfk8s.io or kubeflow.org), so that a cluster moving over sees both kinds.
func recordJobCreated(job *tfv1.TFJob)   { jobsCreated.WithLabelValues(jobLabels(job)...).Inc() }
func recordJobSucceeded(job *tfv1.TFJob) { jobsSucceeded.WithLabelValues(jobLabels(job)...).Inc() }
func recordJobFailed(job *tfv1.TFJob)    { jobsFailed.WithLabelValues(jobLabels(job)...).Inc() }
func recordRestarts(job *tfv1.TFJob, n int32) {
	jobsRestarted.WithLabelValues(jobLabels(job)...).Add(float64(n))
}
func jobLabels(job *tfv1.TFJob) []string {
	return []string{job.Namespace, kubeflow.GVKOf(job).Group}
}
func recordPodCreated()                       { podsCreated.Inc() }
func recordJobStartup(d time.Duration)        { jobStartup.Observe(d.Seconds()) }
func recordPodCreateDuration(d time.Duration) { podCreateDuration.Observe(d.Seconds()) }
func recordReplicaRestart(reason string)      { replicaRestarts.WithLabelValues(reason).Inc() }
func recordGangWait(gang string, d time.Duration) {
	gangWait.WithLabelValues(gang).Observe(d.Seconds())
}
