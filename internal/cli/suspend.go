package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tfk8s/tfk8s/internal/jobs"
)

// newSuspendCommand returns suspend (suspend true) or resume (false).
func newSuspendCommand(o *rootOptions, suspend bool) *cobra.Command {
	use, short, done := "suspend", "Suspend a job: its pods are deleted, its status kept", "suspended"
	if !suspend {
		use, short, done = "resume", "Resume a suspended job: its pods are created again", "resumed"
	}
	return &cobra.Command{
		Use:   use + " JOB",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			job, err := jobs.SetSuspend(cmd.Context(), cs, args[0], suspend)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.env.Out, "%s/%s %s\n", jobs.ResourceOf(job), job.Name, done)
			return nil
		},
	}
}
