package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

// countingMapper counts the questions a mapper is asked.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// TestCachedMapperRemembersMappings checks that a mapping is asked of the discovering
// mapper once, and a kind it does not know yet every time, so a CRD installed later is
// found.
func TestCachedMapperRemembersMappings(t *testing.T) {
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{tfv1.GroupVersion})
	tfjob := tfv1.GroupVersion.WithKind("TFJob")
	known.Add(tfjob, meta.RESTScopeNamespace)
	under := &countingMapper{RESTMapper: known}
	m := &cachedMapper{RESTMapper: under, mappings: map[mappingKey]meta.RESTMapping{}}

	for range 3 {
		mapping, err := m.RESTMapping(tfjob.GroupKind(), tfjob.Version)
		if err != nil {
			t.Fatal(err)
		}
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace || mapping.Resource.Resource != "tfjobs" {
			t.Fatalf("mapping %+v, want the namespaced tfjobs", mapping)
		}
		mapping.Resource.Resource = "changed by a caller"
	}
	if under.asked != 1 {
		t.Errorf("the discovering mapper was asked %d times for one mapping, want 1", under.asked)
	}

	workload := schema.GroupKind{Group: "kueue.x-k8s.io", Kind: "Workload"}
	for range 2 {
		if _, err := m.RESTMapping(workload, "v1beta2"); !meta.IsNoMatchError(err) {
			t.Fatalf("an unknown kind: %v, want a no-match error", err)
		}
	}
	known.Add(workload.WithVersion("v1beta2"), meta.RESTScopeNamespace)
	if _, err := m.RESTMapping(workload, "v1beta2"); err != nil {
		t.Errorf("a kind known after a miss: %v", err)
	}
	if under.asked != 4 {
		t.Errorf("the discovering mapper was asked %d times, want 4: each miss is asked again", under.asked)
	}
}
