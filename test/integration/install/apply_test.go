package install

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRenderedObjectsAreAccepted applies config/default, then the chart over it, as
// kubectl apply --server-side and helm would, and reads every object back.
func TestRenderedObjectsAreAccepted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		render func() ([]*unstructured.Unstructured, error)
	}{
		{"config/default", renderKustomize},
		{"chart", func() ([]*unstructured.Unstructured, error) { return renderChart(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := tc.render()
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "chart" {
				createNamespace(t)
			}
			apply(t, tc.name, objs)
			for _, o := range objs {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(o.GroupVersionKind())
				if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
					t.Errorf("reading back %s: %v", identity(o), err)
				}
			}
			t.Logf("%d objects applied and read back", len(objs))
		})
	}
}

// installChart applies the chart's objects, with its namespace, as helm install
// --create-namespace would.
func installChart(t *testing.T) {
	t.Helper()
	objs, err := renderChart(nil)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t)
	apply(t, "chart", objs)
}

// createNamespace creates tfk8s-system, as helm install --create-namespace does.
func createNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}
	if err := k8sClient.Create(context.Background(), ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// apply applies objs server-side as fieldManager owner, CRDs and namespaces first as
// kubectl and helm order them. It takes the fields another manager set (the other
// install method), as a re-install does.
func apply(t *testing.T, owner string, objs []*unstructured.Unstructured) {
	t.Helper()
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(applyRank(a), applyRank(b))
	})
	for _, o := range objs {
		if err := applyObject(owner, o); err != nil {
			t.Fatal(err)
		}
	}
}

// applyObject applies o server-side as fieldManager owner, taking the fields another
// manager set, and returns the API server's answer.
func applyObject(owner string, o *unstructured.Unstructured) error {
	err := k8sClient.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
		client.FieldOwner("tfk8s-test-"+sanitize(owner)), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("applying %s: %w", identity(o), err)
	}
	return nil
}

// applyRank puts what other objects need first: the namespace and the CRD.
func applyRank(o *unstructured.Unstructured) int {
	switch o.GetKind() {
	case "Namespace", "CustomResourceDefinition":
		return 0
	}
	return 1
}

// sanitize makes a field manager name of a source's name.
func sanitize(s string) string {
	out := []rune(s)
	for i, r := range out {
		if r == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}
