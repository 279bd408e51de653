package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

const topLong = `Show what each replica of a job uses: CPU (cores) and memory (working set)
against the container's request and limit.

While the job exists, the figures come from the cluster's metrics API (metrics.k8s.io,
served by metrics-server where the cluster runs it); where the cluster has none, and
after the job is deleted, from the usage records its replicas' agents stored with the
run (usage.json), rewritten at every upload: each replica's means and peaks over its
latest attempt. Where the agents read GPUs through NVML, a GPU column gives their
utilisation and memory from those records, beside the metrics API's figures too.
The first line says which source the figures come from.

JOB names a job, or one of its runs as JOB/RUN.`

func newTopCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "top JOB",
		Short:   "Show each replica's CPU, memory and GPU use against its request and limit",
		Long:    topLong,
		Example: "  tfk8s top mnist\n  tfk8s top mnist/0f3a9c2e",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.top(cmd.Context(), args[0])
		},
	}
}

// top prints the live figures of the job when the metrics API has them, else those
// of its run.
func (o *rootOptions) top(ctx context.Context, name string) error {
	if err := jobs.RefuseKubeflowRef(name, "top"); err != nil {
		return err
	}
	n, err := storage.ParseRunName(name)
	if err != nil {
		return err
	}
	job, id := n.Job, n.Run
	var why error
	if id == "" {
		var t *topTable
		if t, why = o.liveTop(ctx, job); why == nil {
			// The metrics API knows no GPU: the agents' records, where they have some, do.
			if recorded, err := o.runTop(ctx, job); err == nil {
				addGPUs(t, recorded)
			}
			return printTop(o.env.Out, t)
		}
	}
	t, err := o.runTop(ctx, name)
	if err != nil {
		return fmt.Errorf("no figures of %s: %w", name, errors.Join(why, err))
	}
	if why != nil {
		t.Note = why.Error()
	}
	return printTop(o.env.Out, t)
}

// liveTop reads the job's pods and their metrics; an error says why it has none.
func (o *rootOptions) liveTop(ctx context.Context, name string) (*topTable, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	cs, err := o.clients()
	if err != nil {
		return nil, err
	}
	job, err := jobs.Get(ctx, cs.Client, cs.Namespace, name)
	if err != nil {
		return nil, err
	}
	pods, err := jobs.Pods(ctx, cs.Client, job.Namespace, job.Name)
	if err != nil {
		return nil, err
	}
	mc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the metrics API: %w", err)
	}
	sel := labels.SelectorFromSet(labels.Set{tfv1.LabelJobName: job.Name}).String()
	list, err := mc.MetricsV1beta1().PodMetricses(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("reading the metrics API (metrics.k8s.io) for tfjob %s: %w", job.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("the metrics API (metrics.k8s.io) has no figures of tfjob %s's pods yet", job.Name)
	}
	return metricsTable(job.Name, pods, list.Items), nil
}

// runTop reads the usage records of the job's run (its newest, or JOB/RUN).
func (o *rootOptions) runTop(ctx context.Context, name string) (*topTable, error) {
	c, found, err := o.findRun(ctx, name)
	if err != nil {
		return nil, err
	}
	d, err := runs.Show(ctx, c, found.Run)
	if err != nil {
		return nil, err
	}
	return usageTable(d), nil
}

// podMetrics indexes the metrics listed by pod name.
func podMetrics(items []metricsv1beta1.PodMetrics) map[string]*metricsv1beta1.PodMetrics {
	m := make(map[string]*metricsv1beta1.PodMetrics, len(items))
	for i := range items {
		m[items[i].Name] = &items[i]
	}
	return m
}

// replicaContainer is the container the agent runs in, whose figures are the
// replica's: the one named tensorflow, else the first.
func replicaContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == tfjobContainer {
			return &spec.Containers[i]
		}
	}
	if len(spec.Containers) == 0 {
		return nil
	}
	return &spec.Containers[0]
}
