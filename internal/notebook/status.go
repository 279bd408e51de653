package notebook

import (
	"context"
	"errors"
	"fmt"
	"slices"

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

// State is how a notebook is: running (its Deployment exists) and ready or
// starting, or stopped (only its home claim is left).
type State struct {
	Name    string
	Running bool
	// State is Running, Starting (with why its pod waits) or Stopped.
	State   string
	Created metav1.Time
}

// Status reads how the notebook is; a notebook with neither Deployment nor
// home claim is an error that says so.
func Status(ctx context.Context, c client.Client, namespace, name string) (State, error) {
	st := State{Name: name}
	dep := &appsv1.Deployment{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, dep)
	switch {
	case err == nil && dep.Labels[tfv1.LabelNotebook] == name:
		st.Running, st.Created = true, dep.CreationTimestamp
		st.State, err = podState(ctx, c, namespace, name)
		return st, err
	case err != nil && !apierrors.IsNotFound(err):
		return st, fmt.Errorf("reading the deployment of notebook %s: %w", name, err)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: HomeClaim(name)}, pvc)
	// A claim being deleted (stop --delete-home) is no longer a stopped notebook.
	if err == nil && pvc.Labels[tfv1.LabelNotebook] == name && pvc.DeletionTimestamp == nil {
		st.State, st.Created = notebookStopped, pvc.CreationTimestamp
		return st, nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("reading the home claim of notebook %s: %w", name, err)
	}
	return st, ErrNoNotebook
}

// ErrNoNotebook is Status's error for a notebook that does not exist.
var ErrNoNotebook = errors.New("no such notebook")

// podState is Running when a pod of the notebook serves, else Starting and why.
func podState(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{tfv1.LabelNotebook: name}); err != nil {
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

// List returns the state of each notebook of the namespace, by name: those
// with a Deployment or a home claim.
func List(ctx context.Context, c client.Client, namespace string) ([]State, error) {
	selector := client.HasLabels{tfv1.LabelNotebook}
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
		names = append(names, d.Labels[tfv1.LabelNotebook])
	}
	for _, p := range claims.Items {
		names = append(names, p.Labels[tfv1.LabelNotebook])
	}
	slices.Sort(names)
	var states []State
	for _, name := range slices.Compact(names) {
		st, err := Status(ctx, c, namespace, name)
		if errors.Is(err, ErrNoNotebook) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		states = append(states, st)
	}
	return states, nil
}

// Stop deletes the notebook's objects (those labelled as its, no other of the
// same name) and returns how many it deleted. Its S3 Secret is kept while jobs
// submitted from it exist, since their pods read it (a replica restarted, a TensorBoard
// opened again); readers names them. With the Secret goes the S3 account of the key
// ScopeKeys made for it, through keys; without keys (nil) such a Secret is kept, and
// the error says so, since nothing else records the account.
func Stop(ctx context.Context, c client.Client, namespace, name string, deleteHome bool, keys Keys) (deleted int, readers []string, err error) {
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: namespace, Name: n} }
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: meta(name)}, &corev1.Service{ObjectMeta: meta(name)},
		&rbacv1.RoleBinding{ObjectMeta: meta(name)}, &rbacv1.Role{ObjectMeta: meta(name)},
		&corev1.ServiceAccount{ObjectMeta: meta(name)}, &corev1.Secret{ObjectMeta: meta(tokenSecret(name))},
	}
	if readers, err = jobsReadingSecret(ctx, c, namespace, S3Secret(name)); err != nil {
		return 0, nil, err
	}
	var errs []error
	account, _, scoped, err := heldKey(ctx, c, namespace, name)
	switch {
	case err != nil:
		return 0, readers, err
	case len(readers) > 0:
	case scoped && keys == nil:
		errs = append(errs, fmt.Errorf("secret %s of notebook %s kept: its key's S3 account %s is deleted with it, which needs the bucket's S3 settings", S3Secret(name), name, account))
	default:
		objs = append(objs, &corev1.Secret{ObjectMeta: meta(S3Secret(name))})
	}
	if deleteHome {
		objs = append(objs, &corev1.PersistentVolumeClaim{ObjectMeta: meta(HomeClaim(name))})
	} else if err := disownHome(ctx, c, namespace, name); err != nil {
		return 0, readers, err
	}
	for _, obj := range objs {
		kind := kindOf(c, obj)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) || (err == nil && obj.GetLabels()[tfv1.LabelNotebook] != name) {
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
		if _, secret := obj.(*corev1.Secret); secret && obj.GetName() == S3Secret(name) && scoped {
			errs = append(errs, deleteKey(ctx, keys, name, account))
		}
	}
	return deleted, readers, errors.Join(errs...)
}

// disownHome takes the notebook's account off the owners of the home claim stop
// keeps: the garbage collector would otherwise delete the claim with the account.
func disownHome(ctx context.Context, c client.Client, namespace, name string) error {
	home := &corev1.PersistentVolumeClaim{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: HomeClaim(name)}, home)
	// A claim being deleted (stop --delete-home) has nothing left to keep.
	if apierrors.IsNotFound(err) || (err == nil && (home.Labels[tfv1.LabelNotebook] != name || home.DeletionTimestamp != nil)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the home claim of notebook %s: %w", name, err)
	}
	owners := withoutAccountOwners(home.OwnerReferences)
	if len(owners) == len(home.OwnerReferences) {
		return nil
	}
	patch := client.MergeFrom(home.DeepCopy())
	home.OwnerReferences = owners
	if err := c.Patch(ctx, home, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("keeping the home claim of notebook %s: %w", name, err)
	}
	return nil
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

// Token reads JupyterLab's token from the notebook's Secret.
func Token(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: tokenSecret(name)}, secret); err != nil {
		return "", fmt.Errorf("reading the token of notebook %s: %w", name, err)
	}
	token := string(secret.Data[notebookTokenKey])
	if token == "" {
		return "", fmt.Errorf("reading the token of notebook %s: secret %s has no key %s", name, secret.Name, notebookTokenKey)
	}
	return token, nil
}

// URL is where a running notebook answers inside the cluster; tfk8s notebook open
// forwards a local port to it.
func URL(namespace, name string) string {
	return fmt.Sprintf("http://%s.%s.svc:%d/lab", name, namespace, tfjob.NotebookPort)
}
