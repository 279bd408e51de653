package install

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/manifests"
)

// kubeflowCRD is Kubeflow's TFJob CRD, which kubeflow.enabled and config/kubeflow add.
const kubeflowCRD = "tfjobs.kubeflow.org"

var kubeflowOn = map[string]any{"kubeflow": map[string]any{"enabled": true}}

// TestKubeflowRenders: kubeflow.enabled and config/kubeflow add the kubeflow.org CRD,
// labelled as tfk8s's and kept on uninstall, its admission policy, and the controller's
// rules on kubeflow.org; by default the chart has none of them.
func TestKubeflowRenders(t *testing.T) {
	off, err := renderChart(nil)
	if err != nil {
		t.Fatal(err)
	}
	on, err := renderChart(kubeflowOn)
	if err != nil {
		t.Fatal(err)
	}
	kust, err := renderKustomize()
	if err != nil {
		t.Fatal(err)
	}
	kustOn, err := renderKustomization("kubeflow")
	if err != nil {
		t.Fatal(err)
	}
	added := []string{"CustomResourceDefinition " + kubeflowCRD,
		"ValidatingAdmissionPolicy tfk8s-kubeflow-tfjob", "ValidatingAdmissionPolicyBinding tfk8s-kubeflow-tfjob"}
	wantOn := append(identities(off), added...)
	slices.Sort(wantOn)
	if diff := cmp.Diff(wantOn, identities(on)); diff != "" {
		t.Errorf("chart with kubeflow.enabled: objects (-want +got):\n%s", diff)
	}
	wantKust := append(identities(kust), added...)
	slices.Sort(wantKust)
	if diff := cmp.Diff(wantKust, identities(kustOn)); diff != "" {
		t.Errorf("config/kubeflow: objects (-want +got):\n%s", diff)
	}
	generated, err := manifests.Decode(mustRead(t, filepath.Join(repoRoot, "config", "crd", "kubeflow", "kubeflow.org_tfjobs.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	for name, objs := range map[string][]*unstructured.Unstructured{"chart": on, "config/kubeflow": kustOn} {
		crd := find(objs, "CustomResourceDefinition", kubeflowCRD)
		if diff := cmp.Diff(generated[0].Object["spec"], crd.Object["spec"]); diff != "" {
			t.Errorf("%s: the CRD's spec differs from config/crd/kubeflow's (-generated +%s):\n%s", name, name, diff)
		}
		if got := crd.GetLabels()["app.kubernetes.io/part-of"]; got != "tfk8s" {
			t.Errorf("%s: the CRD's label app.kubernetes.io/part-of is %q, want tfk8s: the chart's lookup takes it for another's", name, got)
		}
	}
	if got := find(on, "CustomResourceDefinition", kubeflowCRD).GetAnnotations()["helm.sh/resource-policy"]; got != "keep" {
		t.Errorf("chart: the CRD's helm.sh/resource-policy is %q, want keep: uninstall would delete every kubeflow.org TFJob", got)
	}
	role := find(kust, "ClusterRole", "tfk8s-controller")
	if !grantsKubeflow(role) {
		t.Fatal("config/rbac/role.yaml grants nothing on kubeflow.org: the controller could not reconcile kubeflow.org TFJobs")
	}
	if offRole := find(off, "ClusterRole", "tfk8s-controller"); grantsKubeflow(offRole) {
		t.Errorf("chart by default grants on kubeflow.org: %v", offRole.Object["rules"])
	}
	if diff := cmp.Diff(role.Object["rules"], find(on, "ClusterRole", "tfk8s-controller").Object["rules"]); diff != "" {
		t.Errorf("chart with kubeflow.enabled: rules (-config/rbac +chart):\n%s", diff)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// grantsKubeflow reports whether a rule of role names the kubeflow.org API group.
func grantsKubeflow(role *unstructured.Unstructured) bool {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	return slices.ContainsFunc(rules, func(r any) bool {
		groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
		return slices.Contains(groups, "kubeflow.org")
	})
}

// rulesWithoutKubeflow are role's rules less the kubeflow.org API group: controller-gen
// lists it beside tfk8s.io where the verbs are the same, and a rule left with no group
// goes.
func rulesWithoutKubeflow(role *unstructured.Unstructured) []any {
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var out []any
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		groups = slices.DeleteFunc(groups, func(g string) bool { return g == "kubeflow.org" })
		if len(groups) > 0 {
			rule["apiGroups"] = groups
			out = append(out, rule)
		}
	}
	return out
}

// TestKubeflowInstallRefusesAnothersCRD: where another controller's tfjobs.kubeflow.org
// is installed (training-operator's), helm install with kubeflow.enabled fails saying
// so, and kubectl apply --server-side -k config/kubeflow stops at a conflict. Once the
// CRD is labelled as tfk8s's (docs/kubeflow.md's migration), both take it over and the
// API server serves tfk8s's schema.
func TestKubeflowInstallRefusesAnothersCRD(t *testing.T) {
	ctx := context.Background()
	createForeignKubeflowCRD(t)
	_, err := renderChartOn(cp.Config, kubeflowOn)
	if err == nil || !strings.Contains(err.Error(), "kubeflow.enabled: the CRD tfjobs.kubeflow.org is already installed, not by tfk8s") {
		t.Fatalf("helm install with kubeflow.enabled over another's CRD: %v, want the refusal", err)
	}
	t.Logf("helm refuses: %v", err)
	kust, err := renderKustomization("kubeflow")
	if err != nil {
		t.Fatal(err)
	}
	err = k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(find(kust, "CustomResourceDefinition", kubeflowCRD).DeepCopy()),
		client.FieldOwner("kubectl"))
	if !apierrors.IsConflict(err) {
		t.Fatalf("kubectl apply --server-side -k config/kubeflow over another's CRD: %v, want a conflict", err)
	}
	t.Logf("kustomize stops at: %v", err)

	// The migration: training-operator stopped, the CRD handed over.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: kubeflowCRD}, crd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crd.DeepCopy())
	metav1.SetMetaDataLabel(&crd.ObjectMeta, "app.kubernetes.io/part-of", "tfk8s")
	if err := k8sClient.Patch(ctx, crd, patch); err != nil {
		t.Fatal(err)
	}
	on, err := renderChartOn(cp.Config, kubeflowOn)
	if err != nil {
		t.Fatalf("helm install with kubeflow.enabled over the CRD labelled as tfk8s's: %v", err)
	}
	createNamespace(t)
	apply(t, "chart", on)
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: kubeflowCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if _, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["tfReplicaSpecs"]; !ok {
		t.Errorf("after the install, %s serves no spec.tfReplicaSpecs: still the other's schema", kubeflowCRD)
	}
}

// createForeignKubeflowCRD installs a tfjobs.kubeflow.org of another controller's, with
// a schema of its own, as field manager training-operator, and removes it at the end.
func createForeignKubeflowCRD(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": kubeflowCRD},
		"spec": map[string]any{
			"group": "kubeflow.org", "scope": "Namespaced",
			"names": map[string]any{"kind": "TFJob", "listKind": "TFJobList", "plural": "tfjobs", "singular": "tfjob"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if err := k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("training-operator")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		got := &apiextensionsv1.CustomResourceDefinition{}
		got.Name = kubeflowCRD
		if err := k8sClient.Delete(ctx, got); client.IgnoreNotFound(err) != nil {
			t.Error(err)
			return
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: kubeflowCRD}, got)), nil
		})
		if err != nil {
			t.Errorf("%s not deleted: %v", kubeflowCRD, err)
		}
	})
}
