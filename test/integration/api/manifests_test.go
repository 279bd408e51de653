package api

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/manifests"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestCRDIsServed(t *testing.T) {
	crds, err := readCRD()
	if err != nil {
		t.Fatal(err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: "tfjobs.tfk8s.io"}, got); err != nil {
		t.Fatalf("reading the installed CRD: %v", err)
	}
	if diff := cmp.Diff(crds.Spec.Names, got.Status.AcceptedNames); diff != "" {
		t.Errorf("accepted names (-want +got):\n%s", diff)
	}
	var columns []string
	for _, c := range got.Spec.Versions[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name)
	}
	if diff := cmp.Diff([]string{"State", "Workers", "PS", "Step", "Progress", "ETA", "Age"}, columns); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
	if got.Spec.Versions[0].Subresources == nil || got.Spec.Versions[0].Subresources.Status == nil {
		t.Error("the status subresource is not enabled")
	}
	if diff := cmp.Diff([]string{"tfj"}, got.Spec.Names.ShortNames); diff != "" {
		t.Errorf("short names (-want +got):\n%s", diff)
	}
}

func readCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile("../../../config/crd/bases/tfk8s.io_tfjobs.yaml")
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return crd, utilyaml.Unmarshal(data, crd)
}

// TestExamplesAreAccepted creates every TFJob found in the YAML files under examples/.
func TestExamplesAreAccepted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	var found int
	err := filepath.WalkDir("../../../examples", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		objs, err := readObjects(path)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if obj.GetKind() != "TFJob" {
				continue
			}
			found++
			obj.SetNamespace(ns)
			if err := k8sClient.Create(context.Background(), obj); err != nil {
				t.Errorf("%s: TFJob %s refused: %v", path, obj.GetName(), err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no TFJob manifest found under examples/")
	}
	t.Logf("%d example TFJobs accepted", found)
}

// TestKubeflowManifestCarriesOver creates Kubeflow's classic distributed MNIST TFJob with
// nothing changed but its apiVersion, and checks the replicas came through.
func TestKubeflowManifestCarriesOver(t *testing.T) {
	job := createKubeflowManifest(t, "testdata/kubeflow-dist-mnist.yaml")
	got := map[tfv1.ReplicaType]int32{}
	for rt, rs := range job.Spec.TFReplicaSpecs {
		got[rt] = *rs.Replicas
	}
	if diff := cmp.Diff(map[tfv1.ReplicaType]int32{"PS": 2, "Worker": 4}, got); diff != "" {
		t.Errorf("replicas (-want +got):\n%s", diff)
	}
	if p := job.Spec.RunPolicy.CleanPodPolicy; p == nil || *p != tfv1.CleanPodPolicyNone {
		t.Errorf("cleanPodPolicy = %v, want None as in the manifest", p)
	}
}

// createKubeflowManifest creates, in a namespace of its own, the Kubeflow TFJob of a
// file with nothing changed but its apiVersion, and returns it as stored.
func createKubeflowManifest(t *testing.T, path string) *tfv1.TFJob {
	t.Helper()
	objs, err := readObjects(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := objs[0]
	if obj.GetAPIVersion() != "kubeflow.org/v1" {
		t.Fatalf("%s: apiVersion is %q", path, obj.GetAPIVersion())
	}
	obj.SetAPIVersion(tfv1.GroupVersion.String())
	obj.SetNamespace(testutil.Namespace(t, k8sClient))
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatalf("Kubeflow TFJob refused: %v", err)
	}
	job := &tfv1.TFJob{}
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), job); err != nil {
		t.Fatal(err)
	}
	return job
}

// readObjects decodes every YAML document of a file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return manifests.Decode(data)
}

// TestTemplateWithoutSpecIsRefused sends what only a manifest can say (a Go client
// always writes the template's spec): a replica whose template has no spec.
func TestTemplateWithoutSpecIsRefused(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	obj := &unstructured.Unstructured{}
	manifest := `{"apiVersion": "tfk8s.io/v1alpha1", "kind": "TFJob", "metadata": {"name": "nospec", "namespace": "` + ns + `"},
		"spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {"metadata": {"labels": {"app": "mnist"}}}}}}}`
	if err := obj.UnmarshalJSON([]byte(manifest)); err != nil {
		t.Fatal(err)
	}
	err := k8sClient.Create(context.Background(), obj)
	if err == nil {
		t.Fatal("TFJob without a pod spec was accepted")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.tfReplicaSpecs.Worker.template.spec: Required value") {
		t.Errorf("error does not name spec.tfReplicaSpecs.Worker.template.spec as required: %v", err)
	}
}
