package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/kubeflow"
)

// finished is the target of a wait for either terminal condition (submit --wait).
const finished tfv1.JobState = ""

// waitTarget is what wait waits for: a condition, or the job's deletion.
type waitTarget struct {
	condition tfv1.JobState
	deletion  bool
}

// parseWaitFor parses --for: condition=NAME (any case) or delete.
func parseWaitFor(s string) (waitTarget, error) {
	if s == "delete" {
		return waitTarget{deletion: true}, nil
	}
	if name, ok := strings.CutPrefix(s, "condition="); ok {
		name, _, _ = strings.Cut(name, "=") // condition=Succeeded=True
		for _, st := range jobStates {
			if strings.EqualFold(name, string(st)) {
				return waitTarget{condition: st}, nil
			}
		}
	}
	return waitTarget{}, fmt.Errorf("--for %q: want condition=Succeeded, condition=Failed, condition=Running, condition=Created, condition=Restarting, condition=Suspended, or delete", s)
}

// jobStates are the condition types of a TFJob.
var jobStates = []tfv1.JobState{tfv1.JobCreated, tfv1.JobRunning, tfv1.JobRestarting, tfv1.JobSucceeded, tfv1.JobFailed, tfv1.JobSuspended}

func newWaitCommand(o *rootOptions) *cobra.Command {
	var forFlag string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait JOB --for=condition=Succeeded [--timeout=DURATION]",
		Short: "Wait until a job has a condition, or is deleted",
		Long: `Wait until a job has a condition (Created, Running, Restarting, Suspended, Succeeded
or Failed) or, with --for=delete, is gone. A job that finishes otherwise than waited
for (Failed while waiting for Succeeded) ends the wait with an error at once.`,
		Example: "  tfk8s wait mnist --for=condition=Succeeded --timeout=2h",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parseWaitFor(forFlag)
			if err != nil {
				return err
			}
			cs, err := o.clients()
			if err != nil {
				return err
			}
			if target.deletion {
				job, err := waitDeleted(cmd.Context(), cs.Client, cs.Namespace, args[0], timeout)
				if err != nil {
					return err
				}
				fmt.Fprintf(o.env.Out, "%s/%s deleted\n", jobs.ResourceOf(job), job.Name)
				return nil
			}
			job, err := waitForJob(cmd.Context(), cs.Client, cs.Namespace, args[0], target.condition, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.env.Out, "%s/%s condition met (%s)\n", jobs.ResourceOf(job), job.Name, target.condition)
			return nil
		},
	}
	cmd.Flags().StringVar(&forFlag, "for", "condition="+string(tfv1.JobSucceeded), "condition=NAME or delete")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: no limit)")
	return cmd
}

// waitForJob polls a job until condition want is true; with want == finished, until it
// succeeded or failed, a failure being an error that exits 1. A job that finished
// without reaching want, or that is deleted, is an error; so is the timeout (0: none).
func waitForJob(ctx context.Context, c client.Client, namespace, name string, want tfv1.JobState, timeout time.Duration) (*tfv1.TFJob, error) {
	expired, stop := expiry(timeout)
	defer stop()
	var job *tfv1.TFJob
	for {
		got, err := jobs.Get(ctx, c, namespace, name)
		switch {
		case err == nil:
			job = got
			if done, err := waitDone(job, want); done {
				return job, err
			}
		case job != nil && apierrors.IsNotFound(err):
			return nil, fmt.Errorf("tfjob %s was deleted while waiting for it", name)
		case ctx.Err() == nil:
			return nil, err
		}
		select {
		case <-expired:
			return nil, &ExitError{Code: 1, Err: fmt.Errorf("timed out after %v waiting for tfjob %s to be %s (now %s)", timeout, name, describeTarget(want), stateOf(job))}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(jobs.PollInterval):
		}
	}
}

// waitDone reports whether the wait for want is over, with an error if it ended
// otherwise than hoped.
func waitDone(job *tfv1.TFJob, want tfv1.JobState) (bool, error) {
	failed := jobs.ConditionTrue(job, tfv1.JobFailed)
	succeeded := jobs.ConditionTrue(job, tfv1.JobSucceeded)
	switch {
	case want == finished && succeeded:
		return true, nil
	case want == finished && failed:
		return true, &ExitError{Code: 1, Err: fmt.Errorf("tfjob %s failed: %s", job.Name, conditionMessage(job, tfv1.JobFailed))}
	case want != finished && jobs.ConditionTrue(job, want):
		return true, nil
	case failed:
		return true, &ExitError{Code: 1, Err: fmt.Errorf("tfjob %s failed, so it will never be %s: %s", job.Name, want, conditionMessage(job, tfv1.JobFailed))}
	case succeeded:
		return true, &ExitError{Code: 1, Err: fmt.Errorf("tfjob %s succeeded, so it will never be %s", job.Name, want)}
	}
	return false, nil
}

// waitDeleted polls until the job ref names is gone, and returns it as last seen (a job
// already gone: one named by ref, of tfk8s.io unless ref says kubeflow.org).
func waitDeleted(ctx context.Context, c client.Client, namespace, ref string, timeout time.Duration) (*tfv1.TFJob, error) {
	expired, stop := expiry(timeout)
	defer stop()
	group, name := jobs.SplitRef(ref)
	last := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if group == kubeflow.GVK.Group {
		last.SetGroupVersionKind(kubeflow.GVK)
	}
	for {
		job, err := jobs.Get(ctx, c, namespace, ref)
		switch {
		case apierrors.IsNotFound(err):
			return last, nil
		case err == nil:
			last = job
		}
		select {
		case <-expired:
			return nil, &ExitError{Code: 1, Err: fmt.Errorf("timed out after %v waiting for tfjob %s to be deleted", timeout, ref)}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(jobs.PollInterval):
		}
	}
}

// conditionMessage is the message of the job's condition typ.
func conditionMessage(job *tfv1.TFJob, typ tfv1.JobState) string {
	if c := meta.FindStatusCondition(job.Status.Conditions, string(typ)); c != nil {
		return c.Message
	}
	return ""
}

// stateOf is a job's state for messages.
func stateOf(job *tfv1.TFJob) string {
	if job == nil || job.Status.State == "" {
		return "no state yet"
	}
	return string(job.Status.State)
}

func describeTarget(want tfv1.JobState) string {
	if want == finished {
		return "Succeeded or Failed"
	}
	return string(want)
}

// expiry returns a channel that receives once timeout has passed (never for 0), and a
// function that releases its timer. A wait's timeout is a timer, not a deadline on the
// requests' context: the client's rate limiter refuses a request whose wait for a token
// would pass the context's deadline, and the wait would then end in that error instead
// of in the timeout.
func expiry(timeout time.Duration) (<-chan time.Time, func()) {
	if timeout <= 0 {
		return nil, func() {}
	}
	timer := time.NewTimer(timeout)
	return timer.C, func() { timer.Stop() }
}
