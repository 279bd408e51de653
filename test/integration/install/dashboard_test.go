package install

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/version"
)

// TestDashboardInstall: the chart's dashboard (dashboard.enabled) and config/dashboard
// install the same objects, of this release's image, which the API server accepts; the
// dashboard's own account may review tokens and access and nothing else, since every
// other request it makes carries the signed-in user's token.
func TestDashboardInstall(t *testing.T) {
	chart, err := renderChart(map[string]any{"dashboard": map[string]any{"enabled": true}})
	if err != nil {
		t.Fatal(err)
	}
	chart = dashboardObjects(chart)
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "config", "dashboard"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	kust, err := manifests.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ClusterRole tfk8s-dashboard",
		"ClusterRoleBinding tfk8s-dashboard",
		"Deployment tfk8s-system/tfk8s-dashboard",
		"Service tfk8s-system/tfk8s-dashboard",
		"ServiceAccount tfk8s-system/tfk8s-dashboard",
	}
	for name, objs := range map[string][]*unstructured.Unstructured{"chart": chart, "config/dashboard": kust} {
		if diff := cmp.Diff(want, identities(objs)); diff != "" {
			t.Errorf("%s: dashboard objects (-want +got):\n%s", name, diff)
		}
		d := find(objs, "Deployment", "tfk8s-dashboard")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		if got, want := c["image"], "ghcr.io/tfk8s/tfk8s-dashboard:"+version.Version; got != want {
			t.Errorf("%s: dashboard image %v, want %s", name, got, want)
		}
		if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--address=0.0.0.0:8686") {
			t.Errorf("%s: dashboard args %v lack --address=0.0.0.0:8686", name, args)
		}
	}
	if diff := cmp.Diff(find(kust, "ClusterRole", "tfk8s-dashboard").Object["rules"], find(chart, "ClusterRole", "tfk8s-dashboard").Object["rules"]); diff != "" {
		t.Errorf("the chart's dashboard ClusterRole differs from config/dashboard's (-want +got):\n%s", diff)
	}

	createNamespace(t)
	apply(t, "chart", chart)
	account := "system:serviceaccount:" + systemNamespace + ":tfk8s-dashboard"
	for _, tc := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}, true},
		// The dashboard reviews tokens and nothing else: no access reviews.
		{authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}, false},
		{authorizationv1.ResourceAttributes{Group: "tfk8s.io", Resource: "tfjobs", Verb: "list"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: systemNamespace}, false},
		{authorizationv1.ResourceAttributes{Resource: "pods", Subresource: "log", Verb: "get", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Resource: "serviceaccounts", Subresource: "token", Verb: "create", Namespace: systemNamespace}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: account, ResourceAttributes: &tc.attrs}}
		if err := k8sClient.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.want {
			t.Errorf("the dashboard's account may %s %s/%s: %v, want %v", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource, sar.Status.Allowed, tc.want)
		}
	}
}

// dashboardObjects are the objects of the dashboard component.
func dashboardObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/component"] == "dashboard" {
			out = append(out, o)
		}
	}
	return out
}
