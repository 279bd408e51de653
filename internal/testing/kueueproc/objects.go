package kueueproc

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CreateObjects creates Kueue's objects (queues, flavors, admission checks) from YAML
// documents, and returns them, to delete.
func CreateObjects(ctx context.Context, c client.Client, docs ...string) ([]client.Object, error) {
	var created []client.Object
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return created, fmt.Errorf("parsing %s: %w", doc, err)
		}
		if err := c.Create(ctx, u); err != nil {
			return created, fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		created = append(created, u)
	}
	return created, nil
}

// ConditionTrue reports whether an unstructured object's status has condition typ True.
func ConditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
