package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// defaultNotebook is the name of a notebook when none is given: one per namespace is
// the common case.
const defaultNotebook = "notebook"

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
	image, size, storageClass, cpu, memory string
	clusterEndpoint                        string
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
	fs.StringVar(&f.image, "image", images.Jupyter, "image of JupyterLab, with the tfk8s CLI on PATH")
	fs.StringVar(&f.size, "size", "10Gi", "size of the home directory's claim")
	fs.StringVar(&f.storageClass, "storage-class", "", "StorageClass of the home directory's claim (default: the cluster's default)")
	fs.StringVar(&f.cpu, "cpu", "", "CPU the notebook requests and is limited to, e.g. 2 or 500m")
	fs.StringVar(&f.memory, "memory", "", "memory the notebook requests and is limited to, e.g. 4Gi")
	fs.StringVar(&f.clusterEndpoint, "s3-cluster-endpoint", "", "S3 endpoint as pods reach it, when not at --s3-endpoint")
	return cmd
}

// notebookName is the NAME argument, else the default.
func notebookName(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return defaultNotebook
}

// checkNotebookName refuses a name no Service (a DNS-1035 label) may have, or one too
// long for its objects' suffixes.
func checkNotebookName(name string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("notebook name %q: %s", name, strings.Join(errs, "; "))
	}
	if long := notebookHomeClaim(name); len(long) > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("notebook name %q: at most %d characters", name, validation.DNS1123LabelMaxLength-len("-home"))
	}
	return nil
}

// spec checks the flags and makes the notebook's spec of them; the S3 settings and
// the token are filled in later.
func (f notebookStartFlags) spec(namespace, name string) (notebookSpec, error) {
	s := notebookSpec{namespace: namespace, name: name, image: f.image, storageClass: f.storageClass}
	if err := checkNotebookName(name); err != nil {
		return s, err
	}
	if f.image == "" {
		return s, fmt.Errorf("--image: must not be empty")
	}
	size, err := parseQuantity("--size", f.size)
	if err == nil && size == nil {
		err = fmt.Errorf("--size: must not be empty")
	}
	if err != nil {
		return s, err
	}
	s.size = *size
	if s.cpu, err = parseQuantity("--cpu", f.cpu); err != nil {
		return s, err
	}
	if s.memory, err = parseQuantity("--memory", f.memory); err != nil {
		return s, err
	}
	if errs := validation.IsDNS1123Subdomain(f.storageClass); f.storageClass != "" && len(errs) > 0 {
		return s, fmt.Errorf("--storage-class %q: %s", f.storageClass, strings.Join(errs, "; "))
	}
	return s, nil
}

// startNotebook creates the notebook's objects, or, when its Deployment exists,
// prints how it is.
func (o *rootOptions) startNotebook(ctx context.Context, name string, f notebookStartFlags) error {
	ns, err := o.namespace()
	if err != nil {
		return err
	}
	s, err := f.spec(ns, name)
	if err != nil {
		return err
	}
	cs, err := o.clients()
	if err != nil {
		return err
	}
	st, err := notebookStatus(ctx, cs.Client, ns, name)
	switch {
	case err != nil && !errors.Is(err, errNoNotebook):
		return err
	case st.running:
		fmt.Fprintf(o.env.Out, "notebook %s/%s is already running: %s; tfk8s notebook open %s -n %s\n", ns, name, st.state, name, ns)
		return nil
	}
	if err := checkStorageClass(ctx, cs.Client, f.storageClass); err != nil {
		return err
	}
	cfg, err := o.storageConfig()
	if err == nil {
		err = jobs.RequireBucket(cfg)
	}
	if err != nil {
		return err
	}
	if f.clusterEndpoint != "" {
		cfg.Endpoint, cfg.Insecure = endpointScheme(f.clusterEndpoint, cfg.Insecure)
	}
	s.s3 = cfg
	if s.token, err = newNotebookToken(); err != nil {
		return err
	}
	if err := createNotebook(ctx, cs.Client, s); err != nil {
		return err
	}
	fmt.Fprintf(o.env.Out, "notebook %s/%s started (image %s, home claim %s); open it with: tfk8s notebook open %s -n %s\n",
		ns, name, s.image, notebookHomeClaim(name), name, ns)
	return nil
}

// checkStorageClass checks that the StorageClass --storage-class names exists, so that
// the claim does not wait forever for one that never will.
func checkStorageClass(ctx context.Context, c client.Client, name string) error {
	if name == "" {
		return nil
	}
	err := c.Get(ctx, client.ObjectKey{Name: name}, &storagev1.StorageClass{})
	if !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("reading --storage-class %q: %w", name, err)
		}
		return nil
	}
	list := &storagev1.StorageClassList{}
	have := "none"
	if c.List(ctx, list) == nil && len(list.Items) > 0 {
		var names []string
		for _, sc := range list.Items {
			names = append(names, sc.Name)
		}
		slices.Sort(names)
		have = strings.Join(names, ", ")
	}
	return fmt.Errorf("--storage-class %q: no such StorageClass (the cluster has: %s)", name, have)
}

// newNotebookToken is JupyterLab's token: 32 random bytes, in hex.
func newNotebookToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the notebook's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// createNotebook creates the notebook's objects, the Deployment last but one, so that
// everything its pod uses is there when it starts. Objects left by an earlier start
// are kept (the home claim, the token), or brought up to date (the Role, the S3
// settings); an object of a name taken by something not of this notebook is an error.
func createNotebook(ctx context.Context, c client.Client, s notebookSpec) error {
	for _, step := range notebookSteps(s) {
		if err := applyNotebookObject(ctx, c, s.name, step.obj, step.update); err != nil {
			return err
		}
	}
	return nil
}

// notebookStep is one object of a notebook, and whether one of its name already
// there is replaced by it (the Role and the S3 settings, which a new CLI may change)
// rather than kept.
type notebookStep struct {
	obj    client.Object
	update bool
}

// notebookSteps are a notebook's objects in the order they are created.
func notebookSteps(s notebookSpec) []notebookStep {
	sa, role, binding := constructNotebookAccount(s)
	token, s3 := constructNotebookSecrets(s)
	return []notebookStep{
		{constructNotebookClaim(s), false}, {sa, false}, {role, true}, {binding, false},
		{token, false}, {s3, true}, {constructNotebookDeployment(s), false}, {constructNotebookService(s), false},
	}
}

// applyNotebookObject creates obj; if it exists and belongs to the notebook, it is
// replaced by obj when update, else kept.
func applyNotebookObject(ctx context.Context, c client.Client, notebook string, obj client.Object, update bool) error {
	kind := notebookKind(c, obj)
	err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
		}
		return nil
	}
	got := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, obj.GetName(), err)
	}
	if got.GetLabels()[tfjob.LabelNotebook] != notebook {
		return fmt.Errorf("%s %s/%s exists and is not notebook %s's: delete it or name the notebook otherwise",
			kind, obj.GetNamespace(), obj.GetName(), notebook)
	}
	if !update {
		return nil
	}
	want := obj.DeepCopyObject().(client.Object)
	want.SetResourceVersion(got.GetResourceVersion())
	if err := c.Update(ctx, want); err != nil {
		return fmt.Errorf("updating %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// notebookKind is obj's kind in lower case, for messages.
func notebookKind(c client.Client, obj client.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "object"
	}
	return strings.ToLower(gvk.Kind)
}
