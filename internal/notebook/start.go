// Package notebook runs JupyterLab in a namespace for tfk8s notebook and the
// dashboard: its objects (Deployment, Service, home claim, account, token and S3
// Secrets), how it is, and stopping it.
package notebook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/jobspec"
)

// DefaultName is the name of a notebook when none is given: one per namespace is
// the common case.
const DefaultName = "notebook"

// Defaults of tfk8s notebook start's flags.
const (
	DefaultImage = images.Jupyter
	DefaultSize  = "10Gi"
)

// Settings are what tfk8s notebook start's flags (and the dashboard's form) say of a
// notebook: --image, --size, --storage-class, --cpu and --memory.
type Settings struct {
	Image, Size, StorageClass, CPU, Memory string
}

// checkNotebookName refuses a name no Service (a DNS-1035 label) may have, or one too
// long for its objects' suffixes.
func checkNotebookName(name string) error {
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return fmt.Errorf("notebook name %q: %s", name, strings.Join(errs, "; "))
	}
	if long := HomeClaim(name); len(long) > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("notebook name %q: at most %d characters", name, validation.DNS1123LabelMaxLength-len("-home"))
	}
	return nil
}

// Spec checks the settings and makes the notebook's spec of them; the S3 settings and
// the token are filled in later.
func (f Settings) Spec(namespace, name string) (Spec, error) {
	s := Spec{namespace: namespace, name: name, image: f.Image, storageClass: f.StorageClass}
	if err := checkNotebookName(name); err != nil {
		return s, err
	}
	if f.Image == "" {
		return s, fmt.Errorf("--image: must not be empty")
	}
	size, err := jobspec.ParseQuantity("--size", f.Size)
	if err == nil && size == nil {
		err = fmt.Errorf("--size: must not be empty")
	}
	if err != nil {
		return s, err
	}
	s.size = *size
	if s.cpu, err = jobspec.ParseQuantity("--cpu", f.CPU); err != nil {
		return s, err
	}
	if s.memory, err = jobspec.ParseQuantity("--memory", f.Memory); err != nil {
		return s, err
	}
	if errs := validation.IsDNS1123Subdomain(f.StorageClass); f.StorageClass != "" && len(errs) > 0 {
		return s, fmt.Errorf("--storage-class %q: %s", f.StorageClass, strings.Join(errs, "; "))
	}
	return s, nil
}

// CheckStorageClass checks that the StorageClass --storage-class names exists, so that
// the claim does not wait forever for one that never will.
func CheckStorageClass(ctx context.Context, c client.Client, name string) error {
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

// NewToken is JupyterLab's token: 32 random bytes, in hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making the notebook's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Create creates the notebook's objects, its ServiceAccount first (it owns the home
// claim), the Deployment last but one, so that everything its pod uses is there when
// it starts. Objects left by an earlier start are kept (the home claim, the token), or
// brought up to date (the Role, the S3 settings); an object of a name taken by
// something not of this notebook is an error.
func Create(ctx context.Context, c client.Client, s Spec) error {
	sa, _, _ := constructNotebookAccount(s)
	live, err := applyObject(ctx, c, s.name, sa, false)
	if err != nil {
		return err
	}
	account := live.(*corev1.ServiceAccount)
	for _, step := range steps(s, account) {
		live, err := applyObject(ctx, c, s.name, step.obj, step.update)
		if err != nil {
			return err
		}
		if home, ok := live.(*corev1.PersistentVolumeClaim); ok {
			if err := ownHome(ctx, c, home, account); err != nil {
				return err
			}
		}
	}
	return nil
}

// step is one object of a notebook, and whether one of its name already
// there is replaced by it (the Role and the S3 settings, which a new CLI may change)
// rather than kept.
type step struct {
	obj    client.Object
	update bool
}

// steps are a notebook's objects after its ServiceAccount account, in the order they
// are created.
func steps(s Spec, account *corev1.ServiceAccount) []step {
	_, role, binding := constructNotebookAccount(s)
	token, s3 := constructNotebookSecrets(s)
	return []step{
		{constructNotebookClaim(s, account), false}, {role, true}, {binding, false},
		{token, false}, {s3, true}, {constructNotebookDeployment(s), false}, {constructNotebookService(s), false},
	}
}

// ownHome makes account the owner of a home claim an earlier start left: stop took
// the owner reference off, and the account is a new one.
func ownHome(ctx context.Context, c client.Client, home *corev1.PersistentVolumeClaim, account *corev1.ServiceAccount) error {
	want := accountOwner(account)
	if slices.Contains(home.OwnerReferences, want) {
		return nil
	}
	patch := client.MergeFrom(home.DeepCopy())
	home.OwnerReferences = append(withoutAccountOwners(home.OwnerReferences), want)
	if err := c.Patch(ctx, home, patch); err != nil {
		return fmt.Errorf("making ServiceAccount %s the owner of claim %s: %w", account.Name, home.Name, err)
	}
	return nil
}

// withoutAccountOwners is refs less the owner references to ServiceAccounts.
func withoutAccountOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	return slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
		return r.APIVersion == "v1" && r.Kind == "ServiceAccount"
	})
}

// applyObject creates obj; if it exists and belongs to the notebook, it is
// replaced by obj when update, else kept. It returns the object as the API server
// holds it.
func applyObject(ctx context.Context, c client.Client, notebook string, obj client.Object, update bool) (client.Object, error) {
	kind := kindOf(c, obj)
	created := obj.DeepCopyObject().(client.Object)
	err := c.Create(ctx, created)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
		}
		return created, nil
	}
	got := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		return nil, fmt.Errorf("reading %s %s: %w", kind, obj.GetName(), err)
	}
	if got.GetLabels()[tfv1.LabelNotebook] != notebook {
		return nil, fmt.Errorf("%s %s/%s exists and is not notebook %s's: delete it or name the notebook otherwise",
			kind, obj.GetNamespace(), obj.GetName(), notebook)
	}
	if !update {
		return got, nil
	}
	want := obj.DeepCopyObject().(client.Object)
	want.SetResourceVersion(got.GetResourceVersion())
	if err := c.Update(ctx, want); err != nil {
		return nil, fmt.Errorf("updating %s %s: %w", kind, obj.GetName(), err)
	}
	return want, nil
}

// kindOf is obj's kind in lower case, for messages.
func kindOf(c client.Client, obj client.Object) string {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return "object"
	}
	return strings.ToLower(gvk.Kind)
}
