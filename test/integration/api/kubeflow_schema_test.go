package api

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestKubeflowSchemaIsTrainingOperators compares the spec schema of tfk8s's
// kubeflow.org TFJob CRD with the one training-operator v1.9.4 publishes, read from its
// Go module (pinned by hack/tools/kubeflow-training-operator), descriptions and tfk8s's
// CEL rules aside. Outside the pod template they must be equal: every field, type,
// required list, enum and default. The template may have more fields (a newer
// Kubernetes), never fewer or other types.
func TestKubeflowSchemaIsTrainingOperators(t *testing.T) {
	dir := testutil.ModuleDir(t, "../../../hack/tools/kubeflow-training-operator", "github.com/kubeflow/training-operator")
	published := specSchema(t, filepath.Join(dir, "manifests/base/crds/kubeflow.org_tfjobs.yaml"))
	ours := specSchema(t, "../../../config/crd/kubeflow/kubeflow.org_tfjobs.yaml")

	pubTemplate, ourTemplate := takeTemplate(t, published), takeTemplate(t, ours)
	if diff := cmp.Diff(published, ours); diff != "" {
		t.Errorf("spec schema outside the pod template (-training-operator +tfk8s):\n%s", diff)
	}
	for _, problem := range missingFrom(pubTemplate, ourTemplate, "template") {
		t.Error(problem)
	}
}

// specSchema is the schema of spec in the CRD file, without descriptions and CEL rules.
func specSchema(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" {
		t.Fatalf("%s: want one version, v1", path)
	}
	root := strip(crd.Spec.Versions[0].Schema.OpenAPIV3Schema).(map[string]any)
	return root["properties"].(map[string]any)["spec"].(map[string]any)
}

// strip drops what may differ: descriptions and x-kubernetes-validations.
func strip(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k != "description" && k != "x-kubernetes-validations" {
				out[k] = strip(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = strip(x)
		}
		return out
	}
	return v
}

// takeTemplate removes the replica's pod template from the spec schema and returns it.
func takeTemplate(t *testing.T, spec map[string]any) map[string]any {
	t.Helper()
	replica, ok := dig(spec, "properties", "tfReplicaSpecs", "additionalProperties", "properties")
	if !ok {
		t.Fatal("no tfReplicaSpecs.additionalProperties.properties in the schema")
	}
	tmpl, _ := replica["template"].(map[string]any)
	delete(replica, "template")
	return tmpl
}

func dig(m map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		next, ok := m[k].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// missingFrom lists what of want got lacks or has otherwise: a property, a type, a
// format, a required field, an item or value schema.
func missingFrom(want, got map[string]any, path string) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, path+": no "+k)
		case k == "properties":
			wp, gp := w.(map[string]any), g.(map[string]any)
			for name, ws := range wp {
				gs, ok := gp[name].(map[string]any)
				if !ok {
					out = append(out, path+": no property "+name)
					continue
				}
				out = append(out, missingFrom(ws.(map[string]any), gs, path+"."+name)...)
			}
		case k == "items" || k == "additionalProperties":
			wm, wok := w.(map[string]any)
			gm, gok := g.(map[string]any)
			if wok && gok {
				out = append(out, missingFrom(wm, gm, path+"["+k+"]")...)
			} else if !cmp.Equal(w, g) {
				out = append(out, path+": "+k+" differs")
			}
		case !cmp.Equal(w, g):
			out = append(out, path+": "+k+" differs: "+cmp.Diff(w, g))
		}
	}
	return out
}
