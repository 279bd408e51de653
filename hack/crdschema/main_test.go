package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const crdPath = "../../config/crd/bases/tfk8s.io_tfjobs.yaml"

// TestCompleteRestoresTheCommittedCRD strips the two constraints from the committed CRD,
// as controller-gen writes it, and expects complete to give back the committed file
// byte for byte; and complete on the committed file to change nothing.
func TestCompleteRestoresTheCommittedCRD(t *testing.T) {
	committed, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(committed, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range lookup(crd, "spec", "versions").([]any) {
		template, containers, err := podTemplate(v)
		if err != nil {
			t.Fatal(err)
		}
		if template["required"] == nil || containers["minItems"] == nil {
			t.Fatalf("the committed CRD lacks template.required or containers.minItems: run make generate")
		}
		delete(template, "required")
		delete(containers, "minItems")
	}
	stripped, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := complete(stripped)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("complete(stripped CRD) differs from the committed CRD")
	}
	again, err := complete(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, committed) {
		t.Errorf("complete changed a CRD it had completed")
	}
}

func TestCompleteRefusesAnotherSchema(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no versions", "apiVersion: v1\nkind: ConfigMap\n", "no spec.versions"},
		{"no template", "spec:\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        type: object\n", "no schema for tfReplicaSpecs.*.template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := complete([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("complete = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
