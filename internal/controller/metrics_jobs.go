package controller

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// jobStates counts the TFJobs in the cache by state and API group (tfk8s.io,
// kubeflow.org) when Prometheus scrapes: a gauge that cannot drift from the jobs,
// however many reconciles and restarts came between. Its namespace label is empty (to
// Prometheus: absent) unless --metrics-jobs-by-namespace asks for one series per
// namespace, state and group.
var jobStates = &jobStateCollector{desc: prometheus.NewDesc("tfk8s_jobs",
	"TFJobs by state (Pending: not yet acted on) and API group, and by namespace with --metrics-jobs-by-namespace.",
	[]string{"state", "namespace", "group"}, nil)}

// jobStatePending names the state of a job tfk8s has not written a status to yet.
const jobStatePending = "Pending"

// allJobStates are the states always reported, as 0 when no job is in them.
var allJobStates = []string{jobStatePending, string(tfv1.JobCreated), string(tfv1.JobRunning), string(tfv1.JobRestarting),
	string(tfv1.JobSuspended), string(tfv1.JobSucceeded), string(tfv1.JobFailed)}

type jobStateCollector struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	// reader is the cache of the running manager; nil reports nothing.
	reader      client.Reader
	byNamespace bool
	// kubeflow is whether the manager reconciles kubeflow.org TFJobs, whose cache
	// is then counted too.
	kubeflow bool
}

// jobStateKey is one series of tfk8s_jobs.
type jobStateKey struct{ state, namespace, group string }

// use makes the collector count the jobs reader holds (the newest manager's cache: one
// process runs one, tests restart it), Kubeflow's too when the manager reconciles them.
func (c *jobStateCollector) use(reader client.Reader, byNamespace, kubeflow bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.byNamespace, c.kubeflow = reader, byNamespace, kubeflow
}

func (c *jobStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *jobStateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader, byNamespace, kf := c.reader, c.byNamespace, c.kubeflow
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := countJobStates(ctx, reader, byNamespace, kf)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for k, n := range counts {
		if byNamespace && k.namespace == "" {
			continue // the zeros of states no job is in
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.state, k.namespace, k.group)
	}
}

// countJobStates counts the jobs in reader by state, group and, if byNamespace, namespace,
// with a zero for every state of each group counted.
func countJobStates(ctx context.Context, reader client.Reader, byNamespace, kf bool) (map[jobStateKey]int, error) {
	counts := map[jobStateKey]int{}
	add := func(group, namespace string, state tfv1.JobState) {
		k := jobStateKey{state: cmp.Or(string(state), jobStatePending), group: group}
		if byNamespace {
			k.namespace = namespace
		}
		counts[k]++
	}
	own := &tfv1.TFJobList{}
	if err := reader.List(ctx, own, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	groups := []string{tfv1.GroupVersion.Group}
	for i := range own.Items {
		add(tfv1.GroupVersion.Group, own.Items[i].Namespace, own.Items[i].Status.State)
	}
	if kf {
		list := &kubeflowv1.TFJobList{}
		if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		groups = append(groups, kubeflowv1.GroupVersion.Group)
		for i := range list.Items {
			st := kubeflow.StatusToModel(&list.Items[i].Status)
			add(kubeflowv1.GroupVersion.Group, list.Items[i].Namespace, jobState(&st))
		}
	}
	for _, g := range groups {
		for _, s := range allJobStates {
			counts[jobStateKey{state: s, group: g}] += 0
		}
	}
	return counts, nil
}

// podTimingClient times every pod creation into tfk8s_pod_create_duration_seconds.
type podTimingClient struct{ client.Client }

func (c podTimingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return c.Client.Create(ctx, obj, opts...)
	}
	start := time.Now()
	err := c.Client.Create(ctx, obj, opts...)
	recordPodCreateDuration(time.Since(start))
	return err
}

// recordReplicaMetrics counts the replicas the status just written records as
// restarted or disrupted, by reason, and the gang wait of a job whose pods are all
// bound for the first time.
func (r *TFJobReconciler) recordReplicaMetrics(job *tfv1.TFJob, o *observation, now metav1.Time) {
	before := sets.New(job.Status.RecordedPods...)
	for key, pod := range o.pods {
		if before.Has(pod.UID) || !o.recorded.Has(pod.UID) || jobSuspended(job) ||
			pod.Status.Phase == corev1.PodSucceeded || o.failed[key.Type].Has(key.Index) {
			continue
		}
		recordReplicaRestart(restartReason(pod))
	}
	r.recordGangWait(job, o, now.Time)
}

// restartReason is why a replica's pod ended: the pod's reason (Evicted, ...), else its
// TensorFlow container's (Error, OOMKilled), else Disrupted.
func restartReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	if t := tfjob.Terminated(pod); t != nil && t.Reason != "" {
		return t.Reason
	}
	return "Disrupted"
}

// gangWaiting are the jobs whose gang wait is recorded and that are not yet Running: a
// job is timed once, not at every reconcile until it runs.
var gangWaiting sync.Map // job UID → struct{}

// recordGangWait times the job from its creation until all of its pods are bound, once.
func (r *TFJobReconciler) recordGangWait(job *tfv1.TFJob, o *observation, now time.Time) {
	// Pods bound and Running by the same status write are timed by it: hence the
	// status before it.
	if findCondition(&job.Status, tfv1.JobRunning) != nil || jobFinished(&job.Status) {
		gangWaiting.Delete(job.UID)
		return
	}
	want, bound := tfjob.TotalReplicas(job), int32(0)
	for _, pod := range o.pods {
		if isActive(pod) && pod.Spec.NodeName != "" {
			bound++
		}
	}
	if want == 0 || bound < want {
		return
	}
	if _, timed := gangWaiting.LoadOrStore(job.UID, struct{}{}); timed {
		return
	}
	gang := string(build.GangProvider(job, r.Gang.DefaultProvider))
	if gang == "" {
		gang = "none"
	}
	recordGangWait(gang, now.Sub(job.CreationTimestamp.Time))
}
