package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func newListCommand(o *rootOptions) *cobra.Command {
	var allNamespaces bool
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List jobs",
		Long: `List jobs. With -o wide, a running job that stores its artifacts also shows its
STEP and LOSS, from the summaries its agents uploaded (read from S3 with your S3
settings, else the job's Secret); the plain list asks only the API server.`,
		Example: "  tfk8s list\n  tfk8s list -A -o wide",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.show(cmd.Context(), nil, allNamespaces, output)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the jobs of every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	return cmd
}

func newGetCommand(o *rootOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "get JOB...",
		Short:   "Show the named jobs: a row each, as list prints them, or whole with -o yaml|json",
		Example: "  tfk8s get mnist\n  tfk8s get mnist -o yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.show(cmd.Context(), args, false, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	return cmd
}

// show prints the named jobs (get), or every job of the namespace or of all
// namespaces (list), in the format of -o. One job asked for by name prints as itself
// in YAML or JSON; several as a List.
func (o *rootOptions) show(ctx context.Context, names []string, allNamespaces bool, output string) error {
	if err := checkOutput(output, outputTable, outputWide, outputYAML, outputJSON); err != nil {
		return err
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	var found []tfv1.TFJob
	var errs []error
	if names == nil {
		var opts []client.ListOption
		if !allNamespaces {
			opts = append(opts, client.InNamespace(cs.Namespace))
		}
		if found, err = jobs.List(ctx, cs.Client, opts...); err != nil {
			return err
		}
	}
	for _, name := range names {
		job, err := jobs.Get(ctx, cs.Client, cs.Namespace, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		found = append(found, *job)
	}

	table := output == outputTable || output == outputWide
	switch {
	case len(found) == 1 && len(names) == 1 && !table:
		return printObject(o.env.Out, forPrinting(&found[0]), output)
	case len(found) == 0 && names == nil && table && allNamespaces:
		fmt.Fprintln(o.env.ErrOut, "No tfjobs found.")
	case len(found) == 0 && names == nil && table:
		fmt.Fprintf(o.env.ErrOut, "No tfjobs found in %s namespace.\n", cs.Namespace)
	case len(found) > 0 || !table:
		var allocated map[string]int64
		if table {
			namespace := cs.Namespace
			if allNamespaces {
				namespace = ""
			}
			if allocated, err = gpuAllocations(ctx, cs.Client, namespace, found); err != nil {
				return err
			}
		}
		var progress map[string]progressFigures
		if output == outputWide {
			progress = o.readProgress(ctx, cs, found)
		}
		if err := printJobs(o.env.Out, found, allocated, progress, output, allNamespaces, time.Now()); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// progressReadTimeout bounds the S3 reads of list -o wide: a slow S3 delays the list
// by no more, and leaves the figures it did not answer unknown.
const progressReadTimeout = 10 * time.Second

// progressFigures are a job's STEP and LOSS cells.
type progressFigures struct{ step, loss string }

// readProgress reads the progress of the running jobs that store their artifacts, a
// few at a time, by "namespace/name". A figure that could not be read is "?", and a
// warning says why.
func (o *rootOptions) readProgress(ctx context.Context, cs *clients, found []tfv1.TFJob) map[string]progressFigures {
	ctx, cancel := context.WithTimeout(ctx, progressReadTimeout)
	defer cancel()
	var running []*tfv1.TFJob
	for i := range found {
		if s := found[i].Status.State; found[i].Spec.Artifacts != nil && (s == tfv1.JobRunning || s == tfv1.JobRestarting) {
			running = append(running, &found[i])
		}
	}
	figures := make([]progressFigures, len(running))
	errs := make([]error, len(running))
	jobs.Parallel(len(running), jobs.MaxParallelReads, func(i int) {
		figures[i], errs[i] = o.progressOf(ctx, cs, running[i])
	})
	out := make(map[string]progressFigures, len(running))
	var failed []error
	for i, job := range running {
		out[job.Namespace+"/"+job.Name] = figures[i]
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("%s: %w", job.Name, errs[i]))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(o.env.ErrOut, "warning: the STEP and LOSS of %d jobs are unknown: %v\n", len(failed), failed[0])
	}
	return out
}

// progressOf reads one job's STEP and LOSS cells.
func (o *rootOptions) progressOf(ctx context.Context, cs *clients, job *tfv1.TFJob) (progressFigures, error) {
	unknown := progressFigures{"?", "?"}
	c, _, err := o.storage().ForJob(ctx, cs, job)
	if err != nil {
		return unknown, err
	}
	p, err := jobs.Progress(ctx, c, job, jobs.ArtifactsBase(job))
	switch {
	case err != nil:
		return unknown, err
	case p == nil:
		return progressFigures{"-", "-"}, nil
	}
	f := progressFigures{strconv.FormatInt(p.Step, 10), "-"}
	if _, last, ok := p.Loss(); ok {
		f.loss = last.Value.Display()
	}
	return f, nil
}

// gpuAllocations is the number of GPUs the pods of each job hold now (as
// tfjob.GPUsAllocated counts them, the dashboard's figure), by "namespace/name", from
// one list of the tfk8s pods of the namespace ("" for every namespace). found are the
// jobs listed, whose deviceClaims say how many devices a pod's claim holds.
func gpuAllocations(ctx context.Context, c client.Client, namespace string, found []tfv1.TFJob) (map[string]int64, error) {
	list := &corev1.PodList{}
	opts := []client.ListOption{client.HasLabels{tfv1.LabelJobName}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing pods for the GPUS column: %w", err)
	}
	byJob := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		key := p.Namespace + "/" + p.Labels[tfv1.LabelJobName]
		byJob[key] = append(byJob[key], p)
	}
	out := make(map[string]int64, len(byJob))
	for i := range found {
		key := found[i].Namespace + "/" + found[i].Name
		out[key] = tfjob.GPUsAllocated(&found[i], byJob[key])
	}
	return out, nil
}

// newTabWriter aligns columns as kubectl does.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}
