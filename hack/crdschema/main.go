// Command crdschema completes the TFJob CRD that controller-gen writes with what no
// marker can say of the fields of a Kubernetes type: every replica's pod template needs
// a spec, and that spec at least one container.
//
// Both could be CEL rules on ReplicaSpec, and were. But the API server evaluates a rule's
// field access through a fresh copy of the schema's properties, and a pod spec has more
// than forty: the two rules cost it more than every other rule of the CRD together, on
// every TFJob write. OpenAPI's required and minItems say the same for nothing, with the
// field's path in the error.
//
// Usage: crdschema <crd.yaml>... (rewritten in place; running it twice changes nothing).
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdschema <crd.yaml>...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdschema: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := complete(in)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// complete returns the CRD manifest in with the pod-template constraints added to the
// schema of every version. The rest of the manifest keeps controller-gen's form: both
// write YAML through JSON, with sorted keys.
func complete(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, err
	}
	versions, ok := lookup(crd, "spec", "versions").([]any)
	if !ok || len(versions) == 0 {
		return nil, fmt.Errorf("no spec.versions")
	}
	for _, v := range versions {
		template, containers, err := podTemplate(v)
		if err != nil {
			return nil, err
		}
		template["required"] = []any{"spec"}
		containers["minItems"] = 1
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

// podTemplate returns the schemas of the pod template and of its containers in one
// version of the CRD.
func podTemplate(version any) (template, containers map[string]any, err error) {
	template, ok := lookup(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", "tfReplicaSpecs",
		"additionalProperties", "properties", "template").(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("version %v: no schema for tfReplicaSpecs.*.template", lookup(version, "name"))
	}
	containers, ok = lookup(template, "properties", "spec", "properties", "containers").(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("version %v: no schema for template.spec.containers", lookup(version, "name"))
	}
	return template, containers, nil
}

// lookup follows keys through nested maps; nil when one is missing.
func lookup(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
