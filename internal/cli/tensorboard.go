//go:build !sdk

package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/forward"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

func newTensorBoardCommand(o *rootOptions) *cobra.Command {
	var f forwardFlags
	cmd := &cobra.Command{
		Use:   "tensorboard JOB [--port N] [--open]",
		Short: "Open a job's TensorBoard: forward a local port to it through the API server, until Ctrl-C",
		Long: `Open the TensorBoard of a job submitted with --tensorboard: forward a local port to
its pod through the API server (no Service or Ingress needed), print the local URL and
keep forwarding until Ctrl-C.

A finished job's TensorBoard stays for spec.tensorboard.ttlSecondsAfterFinished (1 h
by default); opening it restarts that time, and brings a deleted TensorBoard back,
reading the job's summaries from S3, also when its pods are gone.`,
		Example: "  tfk8s tensorboard mnist --open\n  tfk8s tensorboard mnist --port 6006",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.openTensorBoard(cmd.Context(), args[0], f)
		},
	}
	f.addFlags(cmd.Flags(), "the TensorBoard")
	return cmd
}

// openTensorBoard asks the controller to keep (or bring back) the job's TensorBoard,
// waits for its pod, forwards a local port to it, prints the URL, and blocks until ctx
// ends (Ctrl-C) or the forward is lost for good.
func (o *rootOptions) openTensorBoard(ctx context.Context, name string, f forwardFlags) error {
	if _, err := f.local(); err != nil {
		return err
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	job, err := jobs.Get(ctx, cs.Client, cs.Namespace, name)
	if err != nil {
		return err
	}
	if !jobs.TensorBoardEnabled(job) {
		return fmt.Errorf("job %s/%s has no TensorBoard (spec.tensorboard.enabled is false): submit it with --tensorboard", cs.Namespace, name)
	}
	if err := jobs.RequestTensorBoard(ctx, cs.Client, job, time.Now()); err != nil {
		return err
	}
	selector := labels.SelectorFromSet(labels.Set{tfv1.LabelTensorBoard: name}).String()
	pod, err := forward.ReadyPod(ctx, cs.Kube, cs.Namespace, selector, f.timeout, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("waiting for the TensorBoard of job %s/%s: %w", cs.Namespace, name, err)
	}
	title := fmt.Sprintf("TensorBoard of job %s/%s", cs.Namespace, name)
	return o.serveForward(ctx, f, pod, tfjob.TensorBoardPort, title, func(addr net.Addr) string { return "http://" + addr.String() + "/" })
}
