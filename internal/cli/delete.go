package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
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
			for _, ref := range args {
				if err := o.deleteJob(cmd.Context(), cs, ref, wait); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until each job is gone")
	return cmd
}

// deleteJob deletes the job ref names, of tfk8s.io or kubeflow.org, and with wait
// waits until it is gone.
func (o *rootOptions) deleteJob(ctx context.Context, cs *clients, ref string, wait bool) error {
	job, err := jobs.Get(ctx, cs.Client, cs.Namespace, ref)
	if err != nil {
		return err
	}
	recordEnd := o.endRecorder(ctx, cs, job)
	if err := jobs.Delete(ctx, cs.Client, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	recordEnd()
	if wait {
		if _, err := waitDeleted(ctx, cs.Client, cs.Namespace, jobs.RefOf(job), 0); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.env.Out, "%s/%s deleted\n", jobs.ResourceOf(job), job.Name)
	return nil
}

// endRecorder reads a job about to be deleted and returns what writes its run's end
// once it is: state Deleted for a job that has not finished, its final state for one
// whose end the controller has not recorded yet (its record pod goes with it). The S3
// client is made before, while the job's storage Secret still exists. A job that
// stores nothing, or whose end is recorded, needs nothing; a failure is a warning.
func (o *rootOptions) endRecorder(ctx context.Context, cs *clients, job *tfv1.TFJob) func() {
	if job.Spec.Artifacts == nil || jobs.EndRecorded(job) {
		return func() {}
	}
	c, _, err := o.storage().ForJob(ctx, cs, job)
	return func() {
		if err == nil {
			err = jobs.WriteEndRecord(ctx, c, job, time.Now())
		}
		if err != nil {
			fmt.Fprintf(o.env.ErrOut, "warning: tfjob %s: its run's end is not recorded: %v\n", job.Name, err)
		}
	}
}
