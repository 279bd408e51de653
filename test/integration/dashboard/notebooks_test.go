package dashboard

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/notebook"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/browser"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// essence is what a notebook's object is made of, without what the API server adds
// (defaults, metadata of its own): the part tfk8s notebook start decides.
func essence(obj client.Object) any {
	out := map[string]any{"name": obj.GetName(), "labels": obj.GetLabels()}
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		out["spec"] = []any{o.Spec.AccessModes, o.Spec.Resources, o.Spec.StorageClassName}
	case *rbacv1.Role:
		out["spec"] = o.Rules
	case *rbacv1.RoleBinding:
		out["spec"] = []any{o.RoleRef, o.Subjects}
	case *corev1.Secret:
		out["spec"] = o.Data
	case *appsv1.Deployment:
		pod := o.Spec.Template.Spec
		c := pod.Containers[0]
		out["spec"] = []any{o.Spec.Replicas, o.Spec.Selector, o.Spec.Strategy.Type, o.Spec.Template.Labels,
			pod.ServiceAccountName, pod.SecurityContext, pod.Volumes,
			c.Image, c.Command, c.WorkingDir, c.Env, c.Ports, c.VolumeMounts, c.Resources, c.ImagePullPolicy}
	case *corev1.Service:
		out["spec"] = []any{o.Spec.Selector, o.Spec.Ports}
	}
	return out
}

// notebookObjectsIn lists the objects labelled as a notebook's in ns, by kind/name.
func notebookObjectsIn(t *testing.T, ns string) []string {
	t.Helper()
	var names []string
	for _, list := range []client.ObjectList{
		&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.SecretList{}, &corev1.PersistentVolumeClaimList{},
		&corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	} {
		if err := k8sClient.List(context.Background(), list, client.InNamespace(ns), client.HasLabels{tfv1.LabelNotebook}); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			names = append(names, fmt.Sprintf("%T %s", obj, obj.GetName()))
		}
	}
	return names
}

// startNotebookFromForm fills the workspace page's notebook form and submits it.
func startNotebookFromForm(t *testing.T, ctx context.Context, fields map[string]string) {
	t.Helper()
	fillForm(t, ctx, fields)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("notebook-start"))); err != nil {
		t.Fatalf("starting a notebook from the form: %v", err)
	}
}

// TestWorkspaceStartsAndStopsNotebook: the workspace page's form starts a notebook
// whose objects are those tfk8s notebook start builds, with the user's S3
// settings; its row shows the command that opens it, with a copy button; Stop, once
// confirmed, deletes all but its home claim, as tfk8s notebook stop does. Both are
// audited.
func TestWorkspaceStartsAndStopsNotebook(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	srv := s3server.Start(t)
	base, audit := startDashboardWithEnv(t, ns, srv.Env())
	ctx := browser.Start(t)

	if err := browser.Open(ctx, base+"/workspace?namespace="+ns, "#notebook-form"); err != nil {
		t.Fatal(err)
	}
	startNotebookFromForm(t, ctx, map[string]string{"notebook-name": "lab", "notebook-cpu": "500m", "notebook-memory": "1Gi"})
	row, err := browser.WaitText(ctx, `tr.notebook[data-name="lab"]`, "tfk8s notebook open lab -n "+ns, wait)
	if err != nil {
		t.Fatalf("the started notebook's row: %q, %v", row, err)
	}
	if copyCmd, _ := firstAttribute(ctx, `tr.notebook[data-name="lab"] button.copy`, "data-copy"); copyCmd != "tfk8s notebook open lab -n "+ns {
		t.Errorf("the copy button copies %q", copyCmd)
	}

	token := &corev1.Secret{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "lab-token"}, token); err != nil {
		t.Fatalf("reading the notebook's token: %v", err)
	}
	getenv := func(name string) string {
		for _, kv := range srv.Env() {
			if k, v, _ := strings.Cut(kv, "="); k == name {
				return v
			}
		}
		return ""
	}
	s3, err := storage.LoadConfig(storage.Config{}, getenv, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := notebook.Objects(ns, "lab", "", "500m", "1Gi", s3, string(token.Data["token"]))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		got := reflect.New(reflect.TypeOf(w).Elem()).Interface().(client.Object)
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			t.Errorf("reading %T %s: %v", w, w.GetName(), err)
			continue
		}
		if d := cmp.Diff(essence(w), essence(got)); d != "" {
			t.Errorf("%T %s differs from tfk8s notebook start's (-cli +dashboard):\n%s", w, w.GetName(), d)
		}
	}

	err = chromedp.Do(ctx,
		chromedp.Click(`tr.notebook[data-name="lab"] a.button`),
		chromedp.WaitVisible(chromedp.ID("delete-home")),
		chromedp.Click(chromedp.ID("confirm")))
	if err != nil {
		t.Fatalf("stopping the notebook: %v", err)
	}
	if row, err := browser.WaitText(ctx, `tr.notebook[data-name="lab"]`, "Stopped", wait); err != nil {
		t.Errorf("the stopped notebook's row: %q, %v", row, err)
	}
	if d := cmp.Diff([]string{"*v1.PersistentVolumeClaim lab-home"}, notebookObjectsIn(t, ns)); d != "" {
		t.Errorf("after stop, the notebook's objects (-want +got):\n%s", d)
	}
	for _, line := range []string{
		fmt.Sprintf(`audit: user="kubeconfig" action=start notebook=%s/lab remote=`, ns),
		fmt.Sprintf(`audit: user="kubeconfig" action=stop notebook=%s/lab remote=`, ns),
	} {
		if !strings.Contains(audit.String(), line) {
			t.Errorf("the audit log lacks %q:\n%s", line, audit.String())
		}
	}
}

// firstAttribute is an attribute of the first element matching selector.
func firstAttribute(ctx context.Context, selector, name string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {getAttribute: () => ""}).getAttribute(%q) || ""`, selector, name)))
}

// TestNotebookFormErrorsNameTheField: a notebook the command would refuse is
// refused with the command's words, which name the field; the form keeps what was
// typed, and nothing is created.
func TestNotebookFormErrorsNameTheField(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	srv := s3server.Start(t)
	base, _ := startDashboardWithEnv(t, ns, srv.Env())
	ctx := browser.Start(t)
	for _, tc := range []struct {
		name   string
		fields map[string]string
		want   string
	}{
		{"bad name", map[string]string{"notebook-name": "Bad_Name"}, `notebook name "Bad_Name": a DNS-1035 label must consist of lower case`},
		{"bad cpu", map[string]string{"notebook-name": "lab", "notebook-cpu": "lots"}, `--cpu "lots"`},
		{"bad memory", map[string]string{"notebook-name": "lab", "notebook-memory": "-1Gi"}, `--memory "-1Gi"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := browser.Open(ctx, base+"/workspace?namespace="+ns, "#notebook-form"); err != nil {
				t.Fatal(err)
			}
			startNotebookFromForm(t, ctx, tc.fields)
			if text, err := browser.WaitText(ctx, "#notebook-errors", tc.want, wait); err != nil {
				t.Errorf("the objections: %q, %v; want %q", text, err, tc.want)
			}
			for id, v := range tc.fields {
				if got, _ := value(ctx, "#"+id); got != v {
					t.Errorf("field %s keeps %q, want %q", id, got, v)
				}
			}
			if got := notebookObjectsIn(t, ns); len(got) != 0 {
				t.Errorf("a refused notebook created %q", got)
			}
		})
	}
}

// userWithAllOf creates a ServiceAccount that may do anything in ns (and so start a
// notebook there, whose Role it may grant), and nothing elsewhere; returns a token.
func userWithAllOf(t *testing.T, ns, name string) string {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-all"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-all"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}}
	for _, obj := range []client.Object{role, binding} {
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return userWithRole(t, ns, name)
}

// TestInClusterNotebookOnlyInOwnNamespace: in-cluster, a user starts a notebook in
// their namespace with their own token (and the page says it gets no S3 settings);
// the same form pointed at another namespace answers 403 and creates nothing there.
func TestInClusterNotebookOnlyInOwnNamespace(t *testing.T) {
	nsA, nsB := testutil.Namespace(t, k8sClient), testutil.Namespace(t, k8sClient)
	alice := userWithAllOf(t, nsA, "alice")
	base, audit := startDashboard(t, "default", "--in-cluster")
	ctx := browser.Start(t)
	signIn(t, ctx, base, alice)

	if err := browser.Open(ctx, base+"/workspace?namespace="+nsA, "#notebook-form"); err != nil {
		t.Fatal(err)
	}
	if hint, _ := browser.Text(ctx, "#notebook-form .hint"); !strings.Contains(hint, "gets no S3 settings") {
		t.Errorf("the form does not say the notebook gets no S3 settings: %q", hint)
	}
	startNotebookFromForm(t, ctx, map[string]string{"notebook-name": "lab"})
	if row, err := browser.WaitText(ctx, `tr.notebook[data-name="lab"]`, "tfk8s notebook open lab -n "+nsA, wait); err != nil {
		t.Fatalf("alice's notebook's row: %q, %v", row, err)
	}
	dep := &appsv1.Deployment{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: nsA, Name: "lab"}, dep); err != nil {
		t.Fatalf("alice's notebook's Deployment: %v", err)
	}

	// The form, pointed at b, as a page of the dashboard could be made to post it.
	err := chromedp.Do(ctx,
		chromedp.SetAttributeValue(chromedp.ID("notebook-form"), "action", "/workspace/"+nsB+"/notebooks"),
		chromedp.SetValue(chromedp.ID("notebook-name"), "intruder"),
		chromedp.Click(chromedp.ID("notebook-start")),
		chromedp.WaitVisible(chromedp.ID("error")))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := browser.Text(ctx, "main"); !strings.Contains(text, "403") || !strings.Contains(text, "forbidden") {
		t.Errorf("starting a notebook in b: %q, want 403 forbidden", text)
	}
	if got := notebookObjectsIn(t, nsB); len(got) != 0 {
		t.Errorf("alice created in b: %q", got)
	}
	sa := &corev1.ServiceAccount{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: nsB, Name: "intruder"}, sa); !apierrors.IsNotFound(err) {
		t.Errorf("the ServiceAccount intruder in b: %v, want not found", err)
	}
	line := fmt.Sprintf(`audit: user="system:serviceaccount:%s:alice" action=start notebook=%s/intruder`, nsA, nsB)
	if !strings.Contains(audit.String(), line) || !strings.Contains(audit.String(), "forbidden") {
		t.Errorf("the audit log lacks %q, refused:\n%s", line, audit.String())
	}
}
