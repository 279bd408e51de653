package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfk8s/tfk8s/internal/runs"
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
	c, found, err := o.findRun(ctx, name)
	if err != nil {
		return err
	}
	r := found.Run
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
