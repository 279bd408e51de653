package cli

import (
	"errors"
	"fmt"

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
				err := cs.Client.Delete(cmd.Context(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
				switch {
				case apierrors.IsNotFound(err):
					errs = append(errs, &jobs.NotFoundError{Namespace: cs.Namespace, Name: name, Err: err})
					continue
				case err != nil:
					errs = append(errs, fmt.Errorf("deleting tfjob %s: %w", name, err))
					continue
				}
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
