package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
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
			if err := setSuspend(cmd, cs, args[0], suspend); err != nil {
				return err
			}
			fmt.Fprintf(o.env.Out, "tfjob.tfk8s.io/%s %s\n", args[0], done)
			return nil
		},
	}
}

// setSuspend sets spec.runPolicy.suspend with a merge patch of that field alone, so
// that nothing else a concurrent writer changed is overwritten.
func setSuspend(cmd *cobra.Command, cs *clients, name string, suspend bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"runPolicy":{"suspend":%t}}}`, suspend)
	job := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Namespace: cs.namespace, Name: name}}
	err := cs.client.Patch(cmd.Context(), job, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return &notFoundError{namespace: cs.namespace, name: name, err: err}
	}
	if err != nil {
		return fmt.Errorf("patching tfjob %s: %w", name, err)
	}
	return nil
}
