package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tfk8s/tfk8s/internal/jobs"
)

func newLogsCommand(o *rootOptions) *cobra.Command {
	var follow bool
	var output string
	var which jobs.Attempt
	cmd := &cobra.Command{
		Use:   "logs JOB [REPLICA] [-f] [--previous | --attempt N]",
		Short: "Print the logs of a job's replicas, each line prefixed with its replica",
		Long: `Print the logs of a job's replicas (or of one, e.g. worker-0), interleaved, each line
prefixed with its replica: "[worker-0] ...". Logs of running pods come from Kubernetes;
once the pods are gone (or the job itself), from the copies the tfk8s agent backed up
to S3. With -f, follow the logs until the job finishes.

A replica that failed and was retried keeps the log of every attempt: --previous
prints the attempt before the current one (from the pod's previous container while
the pod exists, else from S3), --attempt N prints attempt N from S3. tfk8s describe
lists the attempts.

-o json prints each line as an object of its own line, {"replica":"worker-0","text":"..."},
for a program to read (the Python SDK's get_job_logs).`,
		Example: "  tfk8s logs mnist\n  tfk8s logs mnist worker-1 -f\n  tfk8s logs mnist worker-1 --previous\n  tfk8s logs mnist chief-0 --attempt 1",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAttemptFlags(cmd, which, follow); err != nil {
				return err
			}
			if err := checkOutput(output, outputTable, outputJSON); err != nil {
				return err
			}
			cs, err := o.clients()
			if err != nil {
				return err
			}
			replica := ""
			if len(args) == 2 {
				replica = strings.ToLower(args[1])
			}
			l := &jobs.Logs{Storage: o.storage(), Clients: cs, Name: args[0], Replica: replica, Which: which, Out: &jobs.LineWriter{W: o.env.Out, JSON: output == outputJSON}, ErrOut: o.env.ErrOut}
			if follow {
				return l.Follow(cmd.Context())
			}
			return l.Print(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the logs until the job finishes")
	cmd.Flags().BoolVarP(&which.Previous, "previous", "p", false, "print the attempt before the current one of each replica")
	cmd.Flags().IntVar(&which.Number, "attempt", 0, "print attempt N (1, 2, ...) of each replica, from S3")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json, an object a line")
	return cmd
}

// checkAttemptFlags refuses --previous and --attempt together, or with -f: an
// earlier attempt has ended, there is nothing to follow.
func checkAttemptFlags(cmd *cobra.Command, which jobs.Attempt, follow bool) error {
	attempt := cmd.Flags().Changed("attempt")
	switch {
	case attempt && which.Number < 1:
		return fmt.Errorf("--attempt %d: attempts count from 1", which.Number)
	case attempt && which.Previous:
		return errors.New("--attempt and --previous: give one of them")
	case follow && (attempt || which.Previous):
		return errors.New("--follow prints the current attempt: drop it with --previous or --attempt")
	}
	return nil
}
