package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestKubeflowExamplesAccepted applies every TFJob example of training-operator v1.8.1
// and v1.9.4 (examples/tensorflow), read from their Go modules as pinned by
// hack/tools/kubeflow-training-operator-1.8 and hack/tools/kubeflow-training-operator,
// unchanged, as kubectl apply --server-side does, to the API server with tfk8s's
// kubeflow.org CRD and admission policies: each is stored as written. An example
// without a namespace goes to the test's, as kubectl apply -n would put it; one that
// names its own (kubeflow) gets it created first, as its README says to.
func TestKubeflowExamplesAccepted(t *testing.T) {
	installKubeflowCRD(t)
	ctx := context.Background()
	ns := testutil.Namespace(t, k8sClient)
	for _, tc := range []struct {
		version, module string
		want            []string
	}{
		{"v1.8.1", "kubeflow-training-operator-1.8", []string{
			"dist-mnist/tf_job_mnist.yaml", "distribution_strategy/estimator-API/distributed_tfjob.yaml",
			"distribution_strategy/keras-API/multi_worker_tfjob.yaml", "mnist_with_summaries/tf_job_mnist.yaml", "simple.yaml",
		}},
		{"v1.9.4", "kubeflow-training-operator", []string{
			"dist-mnist/tf_job_mnist.yaml", "distribution_strategy/multi_worker_tfjob.yaml",
			"mnist_with_summaries/tf_job_mnist.yaml", "simple.yaml",
		}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			dir := filepath.Join(testutil.ModuleDir(t, filepath.Join("..", "..", "..", "hack", "tools", tc.module), "github.com/kubeflow/training-operator"), "examples", "tensorflow")
			examples := tfJobExamples(t, dir)
			if diff := cmp.Diff(tc.want, slices.Sorted(maps.Keys(examples))); diff != "" {
				t.Errorf("TFJob examples of %s (-want +got):\n%s", tc.version, diff)
			}
			for _, path := range slices.Sorted(maps.Keys(examples)) {
				for _, obj := range examples[path] {
					applyExample(ctx, t, tc.version+" "+path, obj, ns)
				}
			}
		})
	}
}

// tfJobExamples maps each YAML file under dir that holds a kubeflow.org TFJob, relative
// to dir, to its TFJobs.
func tfJobExamples(t *testing.T, dir string) map[string][]*unstructured.Unstructured {
	t.Helper()
	examples := map[string][]*unstructured.Unstructured{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := manifests.Decode(data)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path) // path is under dir
		for _, o := range objs {
			if o.GetKind() == "TFJob" {
				examples[rel] = append(examples[rel], o)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the examples in %s: %v", dir, err)
	}
	return examples
}

// applyExample applies obj server-side, and wants it stored with the spec it was given;
// it deletes it again, so that the next version's example of the same name starts anew.
func applyExample(ctx context.Context, t *testing.T, name string, obj *unstructured.Unstructured, ns string) {
	t.Helper()
	if obj.GetAPIVersion() != "kubeflow.org/v1" {
		t.Errorf("%s: apiVersion %s, want kubeflow.org/v1", name, obj.GetAPIVersion())
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(ns)
	} else {
		err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if err := k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("kubectl")); err != nil {
		t.Errorf("%s: kubectl apply refused: %v", name, err)
		return
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(obj.GroupVersionKind())
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		t.Fatalf("%s: reading it back: %v", name, err)
	}
	for _, problem := range changedIn(asJSON(t, obj.Object["spec"]), asJSON(t, stored.Object["spec"]), "spec") {
		t.Errorf("%s: stored otherwise than applied: %s", name, problem)
	}
	t.Logf("%s: accepted as %s/%s", name, obj.GetNamespace(), obj.GetName())
	if err := k8sClient.Delete(ctx, stored); err != nil {
		t.Fatal(err)
	}
}

// changedIn lists the fields of applied whose value stored does not keep; what stored
// adds (the CRD's defaults) is no change.
func changedIn(applied, stored any, path string) []string {
	switch a := applied.(type) {
	case map[string]any:
		s, ok := stored.(map[string]any)
		if !ok {
			return []string{path + ": not an object"}
		}
		var problems []string
		for _, k := range slices.Sorted(maps.Keys(a)) {
			problems = append(problems, changedIn(a[k], s[k], path+"."+k)...)
		}
		return problems
	case []any:
		s, ok := stored.([]any)
		if !ok || len(s) != len(a) {
			return []string{fmt.Sprintf("%s: %d items, stored %v", path, len(a), stored)}
		}
		var problems []string
		for i := range a {
			problems = append(problems, changedIn(a[i], s[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return problems
	}
	if !reflect.DeepEqual(applied, stored) {
		return []string{fmt.Sprintf("%s: %v, stored %v", path, applied, stored)}
	}
	return nil
}

// asJSON is v as encoding/json reads it back, numbers as float64 whichever decoder
// read v.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
