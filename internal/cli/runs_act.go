package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

func newRunsDeleteCommand(o *rootOptions) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete RUN",
		Short: "Delete a run's objects in S3: its records, attempts, logs and artifacts",
		Long: `Delete a run's objects in S3, after a confirmation (--yes skips it). A run whose
TFJob still exists is refused: delete the job first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.deleteRun(cmd.Context(), args[0], yes)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}

// deleteRun deletes a run's objects once the user confirmed.
func (o *rootOptions) deleteRun(ctx context.Context, name string, yes bool) error {
	c, r, err := o.findRun(ctx, name)
	if err != nil {
		return err
	}
	if r.Live {
		return fmt.Errorf("run %s/%s: its tfjob %s exists: delete the job first (tfk8s delete %s)", r.Name, r.Run, r.Name, r.Name)
	}
	objs, err := runs.Objects(ctx, c, r)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("run %s/%s: nothing stored under %s", r.Name, r.Run, r.Prefix)
	}
	var size int64
	for _, obj := range objs {
		size += obj.Size
	}
	if !yes {
		fmt.Fprintf(o.env.Out, "Delete run %s/%s: %d objects (%d bytes) under %s? [y/N] ", r.Name, r.Run, len(objs), size, r.Prefix)
		answer, _ := bufio.NewReader(o.env.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(o.env.Out, "Not deleted.")
			return nil
		}
	}
	if err := runs.Delete(ctx, c, objs); err != nil {
		return err
	}
	fmt.Fprintf(o.env.Out, "run %s/%s deleted: %d objects\n", r.Name, r.Run, len(objs))
	return nil
}

// runManifest is the job a stored run was submitted as, for submit --from-run: its
// run.json, or its TFJob while it exists, as recordManifest makes it. The Secret submit
// made for the job went with it, so the job's storage is left for submit to make
// again. What the record said that was ignored is printed; why the job must be
// confirmed with --yes, if it must, goes into f.unverified.
func (o *rootOptions) runManifest(ctx context.Context, name string, f *submitFlags) (*tfv1.TFJob, error) {
	c, r, err := o.findRun(ctx, name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("--from-run %s: %w", name, err)
	case r.Job == nil:
		return nil, fmt.Errorf("--from-run %s: run %s/%s has no record of its job (run.json) to submit again", name, r.Name, r.Run)
	}
	var last *tfv1.TFJob
	if !r.Live {
		last = o.liveJob(ctx, r.Namespace, r.Name)
	}
	m := recordManifest(r, last)
	for _, ig := range m.ignored {
		fmt.Fprintf(o.env.ErrOut, "warning: --from-run %s: ignored %s in run.json\n", name, ig)
	}
	f.unverified = m.unverified
	if f.rightSize {
		if err := o.rightSize(ctx, c, r, m.job); err != nil {
			return nil, fmt.Errorf("--right-size: %w", err)
		}
	}
	return m.job, nil
}

// rightSize applies run r's right-sizing advice to job, the job submit makes of it,
// and says what it changed: a user who asked for it sees the new requests before
// the job runs with them.
func (o *rootOptions) rightSize(ctx context.Context, c *storage.Client, r runs.Run, job *tfv1.TFJob) error {
	if r.Running() {
		return fmt.Errorf("run %s/%s is still running, and its peaks may still rise: right-size it once it ends", r.Name, r.Run)
	}
	d, err := runs.Show(ctx, c, r)
	if err != nil {
		return err
	}
	changed := runs.ApplyAdvice(job, d.Advice)
	for _, why := range d.NoAdvice {
		fmt.Fprintf(o.env.ErrOut, "--right-size: run %s/%s: %s\n", r.Name, r.Run, why)
	}
	for _, a := range d.Advice {
		if !a.Applies() {
			fmt.Fprintf(o.env.ErrOut, "--right-size: not a request to change: %s\n", a)
		}
	}
	if len(changed) == 0 {
		fmt.Fprintf(o.env.ErrOut, "--right-size: run %s/%s has no advice to apply: nothing changed\n", r.Name, r.Run)
	}
	for _, ch := range changed {
		fmt.Fprintf(o.env.ErrOut, "--right-size: %s\n", ch)
	}
	return nil
}
