package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
)

func newDeleteCommand(o *rootOptions) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "delete JOB...",
		Short: "Delete jobs, and with them their pods and Service",
		Long: `Delete jobs. Their pods, Service and other objects go with them (they are owned
by the job); their code, data, artifacts and logs stay in S3.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range args {
				job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: name}}
				recordEnd := o.endRecorder(cmd.Context(), cs, name)
				err := cs.Client.Delete(cmd.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
				switch {
				case apierrors.IsNotFound(err):
					errs = append(errs, &jobs.NotFoundError{Namespace: cs.Namespace, Name: name, Err: err})
					continue
				case err != nil:
					errs = append(errs, fmt.Errorf("deleting tfjob %s: %w", name, err))
					continue
				}
				recordEnd()
				if wait {
					if err := waitDeleted(cmd.Context(), cs.Client, cs.Namespace, name, 0); err != nil {
						errs = append(errs, err)
						continue
					}
				}
				fmt.Fprintf(o.env.Out, "tfjob.tfk8s.io/%s deleted\n", name)
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until each job is gone")
	return cmd
}

// endRecorder reads a job about to be deleted and returns what writes its run's end
// once it is: state Deleted for a job that has not finished, its final state for one
// whose end the controller has not recorded yet (its record pod goes with it). The S3
// client is made before, while the job's storage Secret still exists. A job that
// stores nothing, or whose end is recorded, needs nothing; a failure is a warning.
func (o *rootOptions) endRecorder(ctx context.Context, cs *clients, name string) func() {
	job, err := jobs.Get(ctx, cs.Client, cs.Namespace, name)
	if err != nil || job.Spec.Artifacts == nil || jobs.EndRecorded(job) {
		return func() {}
	}
	c, _, err := o.storage().ForJob(ctx, cs, job)
	return func() {
		if err == nil {
			err = jobs.RecordEnd(ctx, c, job, time.Now())
		}
		if err != nil {
			fmt.Fprintf(o.env.ErrOut, "warning: tfjob %s: its run's end is not recorded: %v\n", name, err)
		}
	}
}
