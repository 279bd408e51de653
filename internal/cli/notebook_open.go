//go:build !sdk

package cli

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/forward"
	"github.com/tfk8s/tfk8s/internal/notebook"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// forwardFlags are the flags of a command that forwards a local port to a pod until
// Ctrl-C and prints its URL: the same for every such command.
type forwardFlags struct {
	address string
	port    int
	browser bool
	timeout time.Duration
}

// addFlags adds the flags; what names the pod's server in their help.
func (f *forwardFlags) addFlags(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.address, "address", "127.0.0.1", "local address to listen on")
	fs.IntVar(&f.port, "port", 0, "local port (0: any free port)")
	fs.BoolVar(&f.browser, "open", false, "open the URL in the browser too")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the pod of "+what+" to be ready")
}

// local is the local address to listen on, checked.
func (f forwardFlags) local() (string, error) {
	if f.port < 0 || f.port > 65535 {
		return "", fmt.Errorf("--port %d: want 0 (any free port) to 65535", f.port)
	}
	return net.JoinHostPort(f.address, strconv.Itoa(f.port)), nil
}

// serveForward forwards f's local address to port of the pod, prints "<title>: URL"
// (url makes the URL of the bound address), opens the browser with --open, and
// blocks until ctx ends (Ctrl-C), or the forward is lost for good.
func (o *rootOptions) serveForward(ctx context.Context, f forwardFlags, pod *corev1.Pod, port int32, title string, url func(net.Addr) string) error {
	local, err := f.local()
	if err != nil {
		return err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, lost, err := forward.Start(ctx, cfg, pod.Namespace, pod.Name, port, local, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("forwarding to %s: %w", title, err)
	}
	u := url(addr)
	fmt.Fprintf(o.env.Out, "%s: %s\n", title, u)
	if f.browser {
		if err := openBrowser(u); err != nil {
			fmt.Fprintf(o.env.ErrOut, "Warning: %v\n", err)
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-lost:
		if err != nil {
			return fmt.Errorf("forwarding to %s: %w", title, err)
		}
		return nil
	}
}

func newNotebookOpenCommand(o *rootOptions) *cobra.Command {
	var f forwardFlags
	cmd := &cobra.Command{
		Use:   "open [NAME]",
		Short: "Forward a local port to a notebook through the API server and print its URL, until Ctrl-C",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.openNotebook(cmd.Context(), notebookName(args), f)
		},
	}
	f.addFlags(cmd.Flags(), "JupyterLab")
	return cmd
}

// openNotebook waits for the notebook's pod to be ready, forwards a local port to it,
// prints the URL with the token, and blocks until ctx ends (Ctrl-C).
func (o *rootOptions) openNotebook(ctx context.Context, name string, f forwardFlags) error {
	if _, err := f.local(); err != nil {
		return err
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	st, err := notebook.Status(ctx, cs.Client, cs.Namespace, name)
	if err == nil && !st.Running {
		err = fmt.Errorf("notebook %s/%s is stopped: tfk8s notebook start %s -n %s starts it again", cs.Namespace, name, name, cs.Namespace)
	}
	if err != nil {
		return fmt.Errorf("notebook %s/%s: %w", cs.Namespace, name, err)
	}
	token, err := notebook.Token(ctx, cs.Client, cs.Namespace, name)
	if err != nil {
		return err
	}
	// The pod must be the notebook Deployment's, not one that only carries its label:
	// the browser hands the pod the notebook's token.
	deploy, err := cs.Kube.AppsV1().Deployments(cs.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("notebook %s/%s: reading its Deployment: %w", cs.Namespace, name, err)
	}
	selector := labels.SelectorFromSet(labels.Set{tfv1.LabelNotebook: name}).String()
	pod, err := forward.ReadyPod(ctx, cs.Kube, cs.Namespace, selector, forward.DeploymentOwner(deploy), f.timeout, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("waiting for notebook %s/%s: %w", cs.Namespace, name, err)
	}
	title := fmt.Sprintf("Notebook %s/%s", cs.Namespace, name)
	return o.serveForward(ctx, f, pod, tfjob.NotebookPort, title, func(addr net.Addr) string { return notebookURL(addr, token) })
}

// notebookURL is JupyterLab's URL at the forwarded address, with the token that logs in.
func notebookURL(addr net.Addr, token string) string {
	return fmt.Sprintf("http://%s/lab?token=%s", addr.String(), token)
}
