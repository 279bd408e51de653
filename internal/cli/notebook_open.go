package cli

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// notebookOpenFlags are the flags of tfk8s notebook open.
type notebookOpenFlags struct {
	address string
	browser bool
	timeout time.Duration
}

func newNotebookOpenCommand(o *rootOptions) *cobra.Command {
	var f notebookOpenFlags
	cmd := &cobra.Command{
		Use:   "open [NAME]",
		Short: "Forward a local port to a notebook through the API server and print its URL, until Ctrl-C",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.openNotebook(cmd.Context(), notebookName(args), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.address, "address", "127.0.0.1:0", "local address to listen on (port 0: any free port)")
	fs.BoolVar(&f.browser, "open", false, "open the URL in the browser too")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the notebook's pod to be ready")
	return cmd
}

// openNotebook waits for the notebook's pod to be ready, forwards a local port to it,
// prints the URL with the token, and blocks until ctx ends (Ctrl-C).
func (o *rootOptions) openNotebook(ctx context.Context, name string, f notebookOpenFlags) error {
	if _, _, err := net.SplitHostPort(f.address); err != nil {
		return fmt.Errorf("--address %q: want host:port: %w", f.address, err)
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	st, err := notebookStatus(ctx, cs.client, cs.namespace, name)
	if err == nil && !st.running {
		err = fmt.Errorf("notebook %s/%s is stopped: tfk8s notebook start %s -n %s starts it again", cs.namespace, name, name, cs.namespace)
	}
	if err != nil {
		return err
	}
	token, err := notebookToken(ctx, cs.client, cs.namespace, name)
	if err != nil {
		return err
	}
	selector := labels.SelectorFromSet(labels.Set{tfjob.LabelNotebook: name}).String()
	pod, err := readyPod(ctx, cs.kube, cs.namespace, selector, f.timeout, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("waiting for notebook %s/%s: %w", cs.namespace, name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, err := forwardToPod(ctx, cfg, cs.namespace, pod.Name, tfjob.NotebookPort, f.address, o.env.ErrOut)
	if err != nil {
		return fmt.Errorf("forwarding to notebook %s/%s: %w", cs.namespace, name, err)
	}
	url := notebookURL(addr, token)
	fmt.Fprintf(o.env.Out, "Notebook %s/%s: %s\n", cs.namespace, name, url)
	if f.browser {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(o.env.ErrOut, "opening the browser: %v\n", err)
		}
	}
	<-ctx.Done()
	return nil
}

// notebookURL is JupyterLab's URL at the forwarded address, with the token that logs in.
func notebookURL(addr net.Addr, token string) string {
	return fmt.Sprintf("http://%s/lab?token=%s", addr.String(), token)
}

// notebookToken reads JupyterLab's token from the notebook's Secret.
func notebookToken(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: notebookTokenSecret(name)}, secret); err != nil {
		return "", fmt.Errorf("reading the token of notebook %s: %w", name, err)
	}
	token := string(secret.Data[notebookTokenKey])
	if token == "" {
		return "", fmt.Errorf("reading the token of notebook %s: secret %s has no key %s", name, secret.Name, notebookTokenKey)
	}
	return token, nil
}
