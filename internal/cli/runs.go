package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

const runsLong = `List the runs kept in S3 under s3://<bucket>/runs/, whether or not their TFJob
still exists. A run is one submission of a job: a job submitted again under the same
name is a new run. While its TFJob exists, a run shows the job's live state; after, the
state its end record says (Unknown if it has none). Files stored before runs existed
show as one run of their job, named "-".

RUN names a run as JOB (its newest run) or JOB/RUN.`

const runsExample = `  tfk8s runs
  tfk8s runs -A --since 24h -l team=vision
  tfk8s runs show mnist
  tfk8s runs show mnist/0f3a9c2e -o yaml`

// runsFlags are the flags of tfk8s runs.
type runsFlags struct {
	allNamespaces bool
	since         time.Duration
	selector      string
	output        string
}

func newRunsCommand(o *rootOptions) *cobra.Command {
	f := &runsFlags{}
	cmd := &cobra.Command{
		Use:     "runs",
		Short:   "List the runs kept in S3, whether or not their TFJob still exists",
		Long:    runsLong,
		Example: runsExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.listRuns(cmd.Context(), f)
		},
	}
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the runs of every namespace")
	cmd.Flags().DurationVar(&f.since, "since", 0, "list only the runs started within this duration (24h)")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "list only the runs whose job's labels match this selector (team=vision)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "output format: yaml or json")
	cmd.AddCommand(newRunsShowCommand(o), newRunsDeleteCommand(o))
	return cmd
}

func newRunsShowCommand(o *rootOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its spec, its replicas' attempts and its artifacts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.showRun(cmd.Context(), args[0], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: yaml or json")
	return cmd
}

// runsStorage is the client and the destination of the runs: the default one of
// submit, in the bucket of the S3 settings.
func (o *rootOptions) runsStorage() (*storage.Client, storage.URI, error) {
	cfg, err := o.storageConfig()
	if err != nil {
		return nil, storage.URI{}, err
	}
	if err := jobs.RequireBucket(cfg); err != nil {
		return nil, storage.URI{}, err
	}
	c, err := storage.New(cfg)
	if err != nil {
		return nil, storage.URI{}, err
	}
	return c.WithKeysFrom(storage.KeysSource(o.env.Getenv, o.env.ConfigFile)), jobs.DefaultDestination(cfg), nil
}

// listRuns prints the runs of the namespace (or of all).
func (o *rootOptions) listRuns(ctx context.Context, f *runsFlags) error {
	if err := checkOutput(f.output, outputTable, outputYAML, outputJSON); err != nil {
		return err
	}
	q := runs.Query{}
	if f.selector != "" {
		sel, err := labels.Parse(f.selector)
		if err != nil {
			return fmt.Errorf("-l %q: %w", f.selector, err)
		}
		q.Selector = sel
	}
	now := time.Now()
	if f.since > 0 {
		q.Since = now.Add(-f.since)
	}
	c, dest, err := o.runsStorage()
	if err != nil {
		return err
	}
	if !f.allNamespaces {
		if q.Namespace, err = o.namespace(); err != nil {
			return err
		}
	}
	live := o.liveJobs(ctx, q.Namespace)
	q.Cache = runs.OpenCache(o.env.RunsCacheDir, dest, q.Namespace)
	found, err := runs.List(ctx, c, dest, live, q)
	if err != nil {
		fmt.Fprintf(o.env.ErrOut, "warning: %v\n", err)
	}
	if err := q.Cache.Save(); err != nil {
		fmt.Fprintf(o.env.ErrOut, "warning: keeping the run records read: %v\n", err)
	}
	switch {
	case f.output != outputTable:
		if found == nil {
			found = []runs.Run{}
		}
		return printObject(o.env.Out, runList{Items: found}, f.output)
	case len(found) == 0 && f.allNamespaces:
		fmt.Fprintf(o.env.ErrOut, "No runs found in %s.\n", dest)
		return nil
	case len(found) == 0:
		fmt.Fprintf(o.env.ErrOut, "No runs found in %s namespace.\n", q.Namespace)
		return nil
	}
	return printRuns(o.env.Out, found, f.allNamespaces, now)
}

// runList is what -o yaml|json prints.
type runList struct {
	Items []runs.Run `json:"items"`
}

// liveJobs lists the TFJobs of namespace ("" for all), whose runs take their state
// from them. Without a cluster, the runs are listed as S3 has them, with a warning.
func (o *rootOptions) liveJobs(ctx context.Context, namespace string) []tfv1.TFJob {
	cs, err := o.clients()
	if err == nil {
		var opts []client.ListOption
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		var list []tfv1.TFJob
		if list, err = jobs.List(ctx, cs.Client, opts...); err == nil {
			return list
		}
	}
	fmt.Fprintf(o.env.ErrOut, "warning: listing tfjobs: %v; the states shown are those S3 recorded\n", err)
	return nil
}

// printRuns prints runs as a table.
func printRuns(w io.Writer, found []runs.Run, withNamespace bool, now time.Time) error {
	tw := newTabWriter(w)
	header := "NAME\tRUN\tSTATE\tSTARTED\tDURATION\tIMAGE\tREPLICAS\tLOSS"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	fmt.Fprintln(tw, header)
	for i := range found {
		r := &found[i]
		row := []string{r.Name, r.Run, r.State, ago(r.Started, now), runDuration(r, now), cmp.Or(r.Image, "-"), cmp.Or(r.Replicas, "-"), lossCell(r)}
		if withNamespace {
			row = append([]string{r.Namespace}, row...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// lossCell renders the last value of a run's main scalar, "-" when it stored none.
func lossCell(r *runs.Run) string {
	if r.Loss == nil {
		return "-"
	}
	return r.Loss.Display()
}

// runDuration renders how long a run ran, "-" when unknown.
func runDuration(r *runs.Run, now time.Time) string {
	if d := r.Duration(now); d > 0 {
		return duration.HumanDuration(d)
	}
	return "-"
}

// showRun prints one run in full.
func (o *rootOptions) showRun(ctx context.Context, name, output string) error {
	if err := checkOutput(output, outputTable, outputYAML, outputJSON); err != nil {
		return err
	}
	c, found, err := o.findRun(ctx, name)
	if err != nil {
		return err
	}
	d, err := runs.Show(ctx, c, found.Run)
	if err != nil {
		return err
	}
	if output != outputTable {
		return printObject(o.env.Out, newRunDocument(d), output)
	}
	return describeRun(o.env.Out, d, time.Now())
}

// findRun finds a run, JOB or JOB/RUN, in the namespace, with the TFJob of that name
// if it exists; a record that could not be read is a warning.
func (o *rootOptions) findRun(ctx context.Context, name string) (*storage.Client, runs.Found, error) {
	n, err := runs.ParseName(name)
	if err != nil {
		return nil, runs.Found{}, err
	}
	src, err := o.runsSource()
	if err != nil {
		return nil, runs.Found{}, err
	}
	found, err := runs.Lookup(ctx, src, n)
	o.warnUnread(found)
	return src.Storage, found, err
}

// runsSource is where the runs of the namespace are looked up: in the bucket of the
// S3 settings, and in the cluster while it can be reached.
func (o *rootOptions) runsSource() (runs.Source, error) {
	c, dest, err := o.runsStorage()
	if err != nil {
		return runs.Source{}, err
	}
	ns, err := o.namespace()
	if err != nil {
		return runs.Source{}, err
	}
	src := runs.Source{Storage: c, Destination: dest, Namespace: ns}
	if cs, err := o.clients(); err != nil {
		src.NoCluster = err
	} else {
		src.Cluster = cs.Client
	}
	return src, nil
}

// warnUnread says, as warnings, what a lookup of a run could not read.
func (o *rootOptions) warnUnread(found runs.Found) {
	if found.LiveErr != nil {
		fmt.Fprintf(o.env.ErrOut, "warning: %v; the state shown is the one S3 recorded\n", found.LiveErr)
	}
	if found.Partial != nil {
		fmt.Fprintf(o.env.ErrOut, "warning: %v\n", found.Partial)
	}
}

// runDocument is a run as -o yaml|json prints it.
type runDocument struct {
	runs.Run `json:",inline"`
	End      *tfjob.RunEnd     `json:"end,omitempty"`
	Job      *tfv1.TFJob       `json:"job,omitempty"`
	Replicas []replicaDocument `json:"replicas"`
	// Progress is the lead replica's progress record, scalars and series.
	Progress *tfevents.Progress `json:"progress,omitempty"`
	// Advice is the right-sizing advice of a finished run.
	Advice []runs.Advice `json:"advice,omitempty"`
	// NoAdvice says why the run, or a type of its replicas, has none, one line each
	// (runs.Advise): all of them, where the text prints them only once a replica of
	// a run that ended recorded its usage, so that a script need not guess.
	NoAdvice []string `json:"noAdvice,omitempty"`
}

// replicaDocument is what one replica stored.
type replicaDocument struct {
	Name     string                 `json:"name"`
	Attempts []storage.Attempt      `json:"attempts"`
	Files    []storage.ManifestFile `json:"files"`
	Error    string                 `json:"error,omitempty"`
	// Usage is what its latest attempt's container used.
	Usage *storage.Usage `json:"usage,omitempty"`
}

func newRunDocument(d *runs.Details) runDocument {
	doc := runDocument{Run: d.Run, End: d.End, Replicas: []replicaDocument{}, Advice: d.Advice, NoAdvice: d.NoAdvice}
	if d.Progress != nil {
		doc.Progress = d.Progress.Progress
	}
	if d.Job != nil {
		doc.Job = jobspec.ForPrinting(d.Job)
	}
	for _, r := range d.Manifests {
		rd := replicaDocument{Name: r.Name, Attempts: []storage.Attempt{}, Files: []storage.ManifestFile{}, Usage: r.Usage}
		if r.Manifest != nil {
			rd.Attempts, rd.Files = r.Manifest.Attempts, r.Manifest.Files
		}
		if r.Err != nil {
			rd.Error = r.Err.Error()
		}
		doc.Replicas = append(doc.Replicas, rd)
	}
	return doc
}

// describeRun writes a run's fields, its spec, its replicas' attempts and its
// artifacts.
func describeRun(w io.Writer, d *runs.Details, now time.Time) error {
	tw := newTabWriter(w)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("Name", d.Name)
	field("Namespace", d.Namespace)
	field("Run", d.Run.Run)
	field("UID", orNone(d.UID))
	state := d.State
	if d.Live {
		state += " (its TFJob exists)"
	}
	field("State", state)
	if d.Reason != "" || d.Message != "" {
		field("Reason", strings.TrimSpace(d.Reason+" "+d.Message))
	}
	field("Started", timestamp(d.Started, now))
	if d.Ended != nil {
		field("Ended", timestamp(*d.Ended, now))
	}
	field("Duration", runDuration(&d.Run, now))
	field("Image", orNone(d.Image))
	field("Replicas", orNone(d.Replicas))
	field("Stored under", orNone(d.Prefix))
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := describeRunSpec(w, d.Job); err != nil {
		return err
	}
	attempts := make([]replicaAttempts, len(d.Manifests))
	for i, r := range d.Manifests {
		attempts[i] = replicaAttempts{replica: r.Name, err: r.Err}
		if r.Manifest != nil {
			attempts[i].attempts = slices.SortedFunc(slices.Values(r.Manifest.Attempts), func(a, b storage.Attempt) int { return cmp.Compare(a.Number, b.Number) })
		}
	}
	if err := describeAttempts(w, attempts, nil, now); err != nil {
		return err
	}
	if err := describeRunArtifacts(w, d.Manifests); err != nil {
		return err
	}
	if err := describeRunUsage(w, d.Manifests); err != nil {
		return err
	}
	if err := describeRunAdvice(w, d); err != nil {
		return err
	}
	var live *tfv1.TFJob // whose figures may still move
	if d.Live {
		live = d.Job
	}
	return describeProgress(w, live, d.Progress, nil, now)
}

// describeRunSpec writes the job's spec as submitted, indented.
func describeRunSpec(w io.Writer, job *tfv1.TFJob) error {
	if job == nil {
		_, err := fmt.Fprintln(w, "Spec:\t<not recorded>")
		return err
	}
	y, err := jobspec.YAML(job)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Spec:")
	for _, line := range strings.SplitAfter(strings.TrimRight(string(y), "\n"), "\n") {
		if _, err := fmt.Fprint(w, "  "+strings.TrimSuffix(line, "\n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// describeRunArtifacts writes the artifact files each replica's manifest lists.
func describeRunArtifacts(w io.Writer, replicas []runs.Replica) error {
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Artifacts:")
	n := 0
	for _, r := range replicas {
		if r.Manifest == nil {
			continue
		}
		for _, f := range r.Manifest.Files {
			if !strings.Contains(f.Key, "/artifacts/") {
				continue
			}
			if n == 0 {
				fmt.Fprintln(tw, "  REPLICA\tPATH\tSIZE")
			}
			n++
			fmt.Fprintf(tw, "  %s\t%s\t%d\n", r.Name, f.Path, f.Size)
		}
	}
	if n == 0 {
		fmt.Fprintln(tw, "  <none>")
	}
	return tw.Flush()
}
