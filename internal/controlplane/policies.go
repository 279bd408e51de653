package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/manifests"
)

// installPolicies creates the admission policies in dir and waits until the API server
// enforces them: a TFJob that breaks the agent-command rule is refused.
func (cp *ControlPlane) installPolicies(ctx context.Context, dir string) error {
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tfk8s.io/v1alpha1",
		"kind":       "TFJob",
		"metadata":   map[string]any{"name": "policy-probe", "namespace": "default"},
		"spec": map[string]any{
			"storage": map[string]any{"secretRef": map[string]any{"name": "s3"}},
			"code":    map[string]any{"source": "s3://bucket/code.tar.gz"},
			"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"template": map[string]any{
				"spec": map[string]any{"containers": []any{map[string]any{"name": "tensorflow", "image": "tf"}}},
			}}},
		},
	}}
	return cp.installPoliciesProbed(ctx, dir, probe, "needs a command")
}

// installPoliciesProbed creates the admission policies in dir and waits until the API
// server enforces them: probe, created as a dry run, is refused with an error that
// contains refusal.
func (cp *ControlPlane) installPoliciesProbed(ctx context.Context, dir string, probe *unstructured.Unstructured, refusal string) error {
	c, err := client.New(cp.Config, client.Options{Scheme: newScheme()})
	if err != nil {
		return err
	}
	objs, err := readManifests(dir)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), refusal), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the admission policies to be enforced: %w", err)
	}
	return nil
}

// readManifests decodes every object in the YAML files of dir.
func readManifests(dir string) ([]*unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		found, err := manifests.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		objs = append(objs, found...)
	}
	return objs, nil
}
