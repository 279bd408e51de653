package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// States of a notebook, as tfk8s notebook list shows them.
const (
	notebookRunning  = "Running"
	notebookStarting = "Starting"
	notebookStopped  = "Stopped"
)

// notebookState is how a notebook is: running (its Deployment exists) and ready or
// starting, or stopped (only its home claim is left).
type notebookState struct {
	name    string
	running bool
	// state is Running, Starting (with why its pod waits) or Stopped.
	state   string
	created metav1.Time
}

// notebookStatus reads how the notebook is; a notebook with neither Deployment nor
// home claim is an error that says so.
func notebookStatus(ctx context.Context, c client.Client, namespace, name string) (notebookState, error) {
	st := notebookState{name: name}
	dep := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, dep)
	switch {
	case err == nil && dep.Labels[tfjob.LabelNotebook] == name:
		st.running, st.created = true, dep.CreationTimestamp
		st.state, err = podState(ctx, c, namespace, name)
		return st, err
	case err != nil && !apierrors.IsNotFound(err):
		return st, fmt.Errorf("reading the deployment of notebook %s: %w", name, err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: notebookHomeClaim(name)}, pvc)
	// A claim being deleted (stop --delete-home) is no longer a stopped notebook.
	if err == nil && pvc.Labels[tfjob.LabelNotebook] == name && pvc.DeletionTimestamp == nil {
		st.state, st.created = notebookStopped, pvc.CreationTimestamp
		return st, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("reading the home claim of notebook %s: %w", name, err)
	}
	return st, errNoNotebook
}

// errNoNotebook is notebookStatus's error for a notebook that does not exist.
var errNoNotebook = errors.New("no such notebook")

// podState is Running when a pod of the notebook serves, else Starting and why.
func podState(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{tfjob.LabelNotebook: name}); err != nil {
		return "", fmt.Errorf("listing the pods of notebook %s: %w", name, err)
	}
	why := "no pod yet"
	for i := range pods.Items {
		if jobs.PodServing(&pods.Items[i]) {
			return notebookRunning, nil
		}
		why = jobs.PodWaitState(&pods.Items[i])
	}
	return notebookStarting + " (" + why + ")", nil
}

func newNotebookListCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the namespace's notebooks: running, starting, or stopped with their home kept",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			states, err := listNotebooks(cmd.Context(), cs.Client, cs.Namespace)
			if err != nil {
				return err
			}
			return printNotebooks(o.env.Out, cs.Namespace, states, time.Now())
		},
	}
}

// listNotebooks returns the state of each notebook of the namespace, by name: those
// with a Deployment or a home claim.
func listNotebooks(ctx context.Context, c client.Client, namespace string) ([]notebookState, error) {
	selector := client.HasLabels{tfjob.LabelNotebook}
	deps := &appsv1.DeploymentList{}
	if err := c.List(ctx, deps, client.InNamespace(namespace), selector); err != nil {
		return nil, fmt.Errorf("listing notebooks: %w", err)
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := c.List(ctx, claims, client.InNamespace(namespace), selector); err != nil {
		return nil, fmt.Errorf("listing notebooks' home claims: %w", err)
	}
	var names []string
	for _, d := range deps.Items {
		names = append(names, d.Labels[tfjob.LabelNotebook])
	}
	for _, p := range claims.Items {
		names = append(names, p.Labels[tfjob.LabelNotebook])
	}
	slices.Sort(names)
	var states []notebookState
	for _, name := range slices.Compact(names) {
		st, err := notebookStatus(ctx, c, namespace, name)
		if errors.Is(err, errNoNotebook) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return states, nil
}

// printNotebooks prints the table of tfk8s notebook list; URL is where the notebook
// answers inside the cluster, tfk8s notebook open forwards to it.
func printNotebooks(w io.Writer, namespace string, states []notebookState, now time.Time) error {
	if len(states) == 0 {
		_, err := fmt.Fprintf(w, "No notebooks in namespace %s: tfk8s notebook start -n %s starts one.\n", namespace, namespace)
		return err
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tAGE\tURL")
	for _, st := range states {
		url := fmt.Sprintf("http://%s.%s.svc:%d/lab", st.name, namespace, tfjob.NotebookPort)
		if !st.running {
			url = "<none>"
		}
		fmt.Fprintln(tw, strings.Join([]string{st.name, st.state, age(st.created, now), url}, "\t"))
	}
	return tw.Flush()
}

func newNotebookStopCommand(o *rootOptions) *cobra.Command {
	var deleteHome bool
	cmd := &cobra.Command{
		Use:   "stop [NAME]",
		Short: "Stop a notebook: delete all its objects but its home directory's claim (unless --delete-home)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			name := notebookName(args)
			deleted, readers, err := stopNotebook(cmd.Context(), cs.Client, cs.Namespace, name, deleteHome)
			if err != nil {
				return err
			}
			if deleted == 0 {
				return fmt.Errorf("notebook %s/%s: %w", cs.Namespace, name, errNoNotebook)
			}
			kept := fmt.Sprintf("its home claim %s is kept: --delete-home deletes it", notebookHomeClaim(name))
			if deleteHome {
				kept = "its home claim deleted"
			}
			if len(readers) > 0 {
				kept += fmt.Sprintf("; its S3 Secret %s is kept while the jobs submitted from it exist, whose pods read it (%s): stop the notebook again once they are deleted",
					notebookS3Secret(name), strings.Join(readers, ", "))
			}
			fmt.Fprintf(o.env.Out, "notebook %s/%s stopped; %s\n", cs.Namespace, name, kept)
			return nil
		},
	}
	cmd.Flags().BoolVar(&deleteHome, "delete-home", false, "delete the home directory's claim too, and with it the files in it")
	return cmd
}

// stopNotebook deletes the notebook's objects (those labelled as its, no other of the
// same name) and returns how many it deleted. Its S3 Secret is kept while jobs
// submitted from it exist, since their pods read it (a replica restarted, a TensorBoard
// opened again); readers names them.
func stopNotebook(ctx context.Context, c client.Client, namespace, name string, deleteHome bool) (deleted int, readers []string, err error) {
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: namespace, Name: n} }
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: meta(name)}, &corev1.Service{ObjectMeta: meta(name)},
		&rbacv1.RoleBinding{ObjectMeta: meta(name)}, &rbacv1.Role{ObjectMeta: meta(name)},
		&corev1.ServiceAccount{ObjectMeta: meta(name)}, &corev1.Secret{ObjectMeta: meta(notebookTokenSecret(name))},
	}
	if readers, err = jobsReadingSecret(ctx, c, namespace, notebookS3Secret(name)); err != nil {
		return 0, nil, err
	}
	if len(readers) == 0 {
		objs = append(objs, &corev1.Secret{ObjectMeta: meta(notebookS3Secret(name))})
	}
	if deleteHome {
		objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: meta(notebookHomeClaim(name))})
	}
	var errs []error
	for _, obj := range objs {
		kind := notebookKind(c, obj)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) || (err == nil && obj.GetLabels()[tfjob.LabelNotebook] != name) {
			continue
		}
		if err == nil {
			err = c.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err))
			continue
		}
		deleted++
	}
	return deleted, readers, errors.Join(errs...)
}

// jobsReadingSecret names the namespace's jobs whose pods read their S3 settings from
// the Secret.
func jobsReadingSecret(ctx context.Context, c client.Client, namespace, secret string) ([]string, error) {
	list := &tfv1.TFJobList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing the tfjobs that may read secret %s: %w", secret, err)
	}
	var names []string
	for _, job := range list.Items {
		if s := job.Spec.Storage; s != nil && s.SecretRef.Name == secret && job.DeletionTimestamp == nil {
			names = append(names, job.Name)
		}
	}
	return names, nil
}
