//go:build !sdk

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/notebook"
)

// newNotebookCommand returns tfk8s notebook and its subcommands.
func newNotebookCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notebook",
		Short: "Run JupyterLab in a namespace, with the tfk8s CLI and the namespace's storage inside",
		Long: `tfk8s notebook runs JupyterLab in a namespace: a Deployment of the Jupyter image (TensorFlow,
JupyterLab and the tfk8s CLI), a claim for the home directory that outlives it, and a
ServiceAccount that may submit and watch TFJobs in that namespace only, so that a cell
can run "!tfk8s submit . --workers 4 ...". It is token-protected and reached through
the API server: tfk8s notebook open forwards a local port to it.`,
	}
	cmd.AddCommand(newNotebookStartCommand(o), newNotebookStopCommand(o), newNotebookListCommand(o), newNotebookOpenCommand(o))
	return cmd
}

// notebookStartFlags are the flags of tfk8s notebook start.
type notebookStartFlags struct {
	notebook.Settings
	clusterEndpoint string
}

func newNotebookStartCommand(o *rootOptions) *cobra.Command {
	var f notebookStartFlags
	cmd := &cobra.Command{
		Use:   "start [NAME]",
		Short: "Start a notebook (JupyterLab) in the namespace, or say how the running one is",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.startNotebook(cmd.Context(), notebookName(args), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Image, "image", notebook.DefaultImage, "image of JupyterLab, with the tfk8s CLI on PATH")
	fs.StringVar(&f.Size, "size", notebook.DefaultSize, "size of the home directory's claim")
	fs.StringVar(&f.StorageClass, "storage-class", "", "StorageClass of the home directory's claim (default: the cluster's default)")
	fs.StringVar(&f.CPU, "cpu", "", "CPU the notebook requests and is limited to, e.g. 2 or 500m")
	fs.StringVar(&f.Memory, "memory", "", "memory the notebook requests and is limited to, e.g. 4Gi")
	fs.StringVar(&f.clusterEndpoint, "s3-cluster-endpoint", "", "S3 endpoint as pods reach it, when not at --s3-endpoint")
	return cmd
}

// notebookName is the NAME argument, else the default.
func notebookName(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return notebook.DefaultName
}

// startNotebook creates the notebook's objects, or, when its Deployment exists,
// prints how it is.
func (o *rootOptions) startNotebook(ctx context.Context, name string, f notebookStartFlags) error {
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	s, err := f.Spec(ns, name)
	if err != nil {
		return err
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	st, err := notebook.Status(ctx, cs.Client, ns, name)
	switch {
	case err != nil && !errors.Is(err, notebook.ErrNoNotebook):
		return err
	case st.Running:
		fmt.Fprintf(o.env.Out, "notebook %s/%s is already running: %s; tfk8s notebook open %s -n %s\n", ns, name, st.State, name, ns)
		return nil
	}
	if err := notebook.CheckStorageClass(ctx, cs.Client, f.StorageClass); err != nil {
		return err
	}
	cfg, err := o.storageConfig()
	if err == nil {
		err = jobs.RequireBucket(cfg)
	}
	if err != nil {
		return err
	}
	s.S3 = cfg
	if f.clusterEndpoint != "" {
		s.S3.Endpoint, s.S3.Insecure = jobs.EndpointScheme(f.clusterEndpoint, cfg.Insecure)
	}
	if s.Token, err = notebook.NewToken(); err != nil {
		return err
	}
	// The key is made with cfg, the endpoint as the CLI reaches it.
	shared, err := notebook.Start(ctx, cs.Client, notebook.AdminKeys(cfg, nil), s)
	if shared {
		fmt.Fprintf(o.env.ErrOut, "the S3 server at %s makes no per-notebook keys: the notebook shares all of bucket %s's data, with every holder of its keys\n", cfg.Endpoint, cfg.Bucket)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.Out, "notebook %s/%s started (image %s, home claim %s); open it with: tfk8s notebook open %s -n %s\n",
		ns, name, f.Image, notebook.HomeClaim(name), name, ns)
	return nil
}
