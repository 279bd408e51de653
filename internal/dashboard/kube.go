package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// kubeCluster is the dashboard's view of the cluster, as one user, through the
// code the CLI's commands run too (jobs, jobspec, notebook).
type kubeCluster struct {
	client client.Client
	kube   kubernetes.Interface
	// storage finds a job's files in S3.
	storage jobs.Storage
	// noS3 is true in-cluster: a notebook started there gets no S3 settings.
	noS3 bool
	// locations remembers where the jobs this session looked at store, so that the
	// job page's polled progress lists S3 once per job.
	locations jobs.Locations
	// usage remembers the jobs' usage records for a while, read at each poll.
	usage usageCache
}

// NewKubeCluster returns the NewClusterFunc of a dashboard that reaches the API
// server with each user's credentials, and S3 as storage says; noS3 starts notebooks
// without S3 settings, as the dashboard in the cluster must.
func NewKubeCluster(storage jobs.Storage, noS3 bool) NewClusterFunc {
	return func(cfg *rest.Config, _ string) (Cluster, error) {
		cs, err := jobs.Connect(cfg, "")
		if err != nil {
			return nil, err
		}
		return &kubeCluster{client: cs.Client, kube: cs.Kube, storage: storage, noS3: noS3}, nil
	}
}

// in is the clients, acting in namespace.
func (d *kubeCluster) in(namespace string) *jobs.Clients {
	return &jobs.Clients{Client: d.client, Kube: d.kube, Namespace: namespace}
}

func (d *kubeCluster) Namespaces(ctx context.Context) ([]string, error) {
	list, err := d.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	return names, nil
}

func (d *kubeCluster) Jobs(ctx context.Context, namespace string) ([]JobRow, error) {
	list, err := jobs.List(ctx, d.client, client.InNamespace(namespace))
	if err != nil {
		return nil, err
	}
	pods := d.podsByJob(ctx, namespace)
	now := time.Now()
	rows := make([]JobRow, 0, len(list))
	for i := range list {
		job := &list[i]
		row := JobRow{
			Namespace: job.Namespace, Name: job.Name, Group: kubeflowGroupOf(job), State: string(job.Status.State),
			Ready: readyPods(pods[job.Name]), Created: job.CreationTimestamp.Time, Image: jobs.Image(job),
			GPUsAllocated: tfjob.GPUsAllocated(job, pods[job.Name]), GPUsRequested: tfjob.GPUsRequested(job),
		}
		for _, rt := range tfv1.ReplicaTypes {
			row.Desired += tfjob.Replicas(job.Spec.TFReplicaSpecs[rt])
		}
		if start := jobs.TimeOf(job.Status.StartTime); !start.IsZero() {
			row.Duration = jobs.TimeOf(job.Status.CompletionTime).Sub(start)
			if job.Status.CompletionTime == nil {
				row.Duration = now.Sub(start)
			}
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b JobRow) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

// kubeflowGroupOf is "kubeflow.org" for a Kubeflow TFJob, "" for tfk8s.io's.
func kubeflowGroupOf(job *tfv1.TFJob) string {
	if kubeflow.IsKubeflow(job) {
		return kubeflow.GVK.Group
	}
	return ""
}

// podsByJob groups the pods of a namespace by their job; none if the user may not
// list pods.
func (d *kubeCluster) podsByJob(ctx context.Context, namespace string) map[string][]corev1.Pod {
	pods := &corev1.PodList{}
	if err := d.client.List(ctx, pods, client.InNamespace(namespace), client.HasLabels{tfv1.LabelJobName}); err != nil {
		return nil
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		byJob[p.Labels[tfv1.LabelJobName]] = append(byJob[p.Labels[tfv1.LabelJobName]], p)
	}
	return byJob
}

// readyPods counts the pods that are ready or have succeeded.
func readyPods(pods []corev1.Pod) int32 {
	var n int32
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodSucceeded || jobs.PodServing(&pods[i]) {
			n++
		}
	}
	return n
}

func (d *kubeCluster) Job(ctx context.Context, namespace, name string) (*JobPage, error) {
	job, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	pods, err := jobs.Pods(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	events, err := jobs.Events(ctx, d.client, job)
	if err != nil {
		return nil, err
	}
	page := &JobPage{Job: job, GPUsAllocated: tfjob.GPUsAllocated(job, pods), GPUsRequested: tfjob.GPUsRequested(job), Kubeflow: kubeflow.IsKubeflow(job)}
	for i := range pods {
		p := &pods[i]
		phase := jobs.PodPhase(p)
		restarts, exit := jobs.ContainerSummary(p)
		page.Replicas = append(page.Replicas, ReplicaRow{
			Replica: jobs.ReplicaName(p), Pod: p.Name, Phase: phase, Node: p.Spec.NodeName,
			Restarts: restarts, ExitCode: exit, Created: p.CreationTimestamp.Time, GPUs: tfjob.PodGPUs(&p.Spec),
		})
	}
	for i := range events {
		e := &events[i]
		page.Events = append(page.Events, EventRow{
			Time: jobs.EventTime(e), Type: e.Type, Reason: e.Reason, From: e.ReportingController, Message: e.Note,
		})
	}
	var buf bytes.Buffer
	if err := jobs.WriteTFConfig(&buf, pods, ""); err == nil {
		page.TFConfig = buf.String()
	}
	if y, err := jobspec.YAML(job); err == nil {
		page.YAML = string(y)
	}
	return page, nil
}

// Logs streams logs as tfk8s logs [-f | --previous] prints them; its notes (a
// replica with no logs yet) go to w too.
func (d *kubeCluster) Logs(ctx context.Context, req LogRequest, w io.Writer) error {
	l := &jobs.Logs{
		Storage: d.storage, Clients: d.in(req.Namespace), Name: req.Job, Replica: req.Replica,
		Which: jobs.Attempt{Previous: req.Previous}, Out: &jobs.LineWriter{W: w}, ErrOut: w,
	}
	if req.Follow {
		return l.Follow(ctx)
	}
	return l.Print(ctx)
}

func (d *kubeCluster) Suspend(ctx context.Context, namespace, name string, suspend bool) error {
	_, err := jobs.SetSuspend(ctx, d.in(namespace), name, suspend)
	return err
}

// Delete deletes the job of that name, of either group, as tfk8s delete does.
func (d *kubeCluster) Delete(ctx context.Context, namespace, name string) error {
	job, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return err
	}
	return jobs.Delete(ctx, d.client, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
}
