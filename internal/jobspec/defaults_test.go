package jobspec

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// crdSchema is the schema of the TFJob CRD that make generate writes.
func crdSchema(t *testing.T) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/bases/tfk8s.io_tfjobs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == tfv1.GroupVersion.Version {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("the CRD serves no version %s", tfv1.GroupVersion.Version)
	return nil
}

// applyDefaults sets the schema's defaults in x where it leaves a property out, and in
// what it holds, as the API server does at admission (its structural defaulting, for
// the keywords this CRD uses: properties, additionalProperties and items).
func applyDefaults(t *testing.T, x any, s *apiextensionsv1.JSONSchemaProps) {
	switch x := x.(type) {
	case map[string]any:
		for name, prop := range s.Properties {
			if _, ok := x[name]; !ok && prop.Default != nil {
				var v any
				if err := json.Unmarshal(prop.Default.Raw, &v); err != nil {
					t.Fatalf("the default of %s: %v", name, err)
				}
				x[name] = v
			}
			if v, ok := x[name]; ok {
				applyDefaults(t, v, &prop)
			}
		}
		if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
			for _, v := range x {
				applyDefaults(t, v, ap.Schema)
			}
		}
	case []any:
		if s.Items != nil && s.Items.Schema != nil {
			for _, v := range x {
				applyDefaults(t, v, s.Items.Schema)
			}
		}
	}
}

// TestServerDefaultsAreTheCRDs: withServerDefaults sets what the CRD's schema defaults
// set, field for field, on a job that leaves every defaulted field out: a default
// added to, changed in or dropped from the API types fails here until
// withServerDefaults follows, so that a job read back and one built compare alike.
func TestServerDefaultsAreTheCRDs(t *testing.T) {
	sparse := func() *tfv1.TFJob {
		job := NewTFJob()
		job.Name, job.Namespace = "mnist", "ml"
		job.Spec.TFReplicaSpecs = map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
			tfv1.ReplicaTypePS:     {},
			tfv1.ReplicaTypeWorker: {DeviceClaim: &tfv1.DeviceClaim{DeviceClassName: "gpu.example.com"}},
		}
		job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: "s3"}}
		job.Spec.Artifacts = &tfv1.Artifacts{Destination: "s3://bucket/runs/", Paths: []string{"/ckpt"}}
		job.Spec.Code = &tfv1.Code{Source: "s3://bucket/code.tar.gz"}
		job.Spec.TensorBoard = &tfv1.TensorBoard{Enabled: true}
		return job
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sparse())
	if err != nil {
		t.Fatal(err)
	}
	applyDefaults(t, obj, crdSchema(t))
	byServer := &tfv1.TFJob{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, byServer); err != nil {
		t.Fatal(err)
	}
	ours := sparse()
	withServerDefaults(&ours.Spec)
	if diff := cmp.Diff(byServer.Spec, ours.Spec); diff != "" {
		t.Errorf("the CRD's defaults (-) and withServerDefaults (+) differ:\n%s", diff)
	}
}
