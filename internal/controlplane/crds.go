package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// installCRDs creates (or updates) every CRD in dir and waits until each is established.
func (cp *ControlPlane) installCRDs(ctx context.Context, dir string) error {
	crds, err := ReadCRDs(dir)
	if err != nil {
		return err
	}
	return cp.InstallCRDs(ctx, crds...)
}

// InstallCRDs creates (or updates) each CRD and waits until each is established:
// served, so that objects of its kind can be created.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	return InstallCRDsAt(ctx, cp.Config, crds...)
}

// InstallCRDsAt is InstallCRDs on the cluster cfg reaches, such as a local cluster.
func InstallCRDsAt(ctx context.Context, cfg *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		return err
	}
	for _, crd := range crds {
		err := c.Create(ctx, crd)
		if apierrors.IsAlreadyExists(err) {
			// A detached control plane restarted on its own etcd: bring the CRD up to date.
			err = updateCRD(ctx, c, crd)
		}
		if err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}

// updateCRD replaces the stored CRD of the same name with crd.
func updateCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	stored := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), stored); err != nil {
		return err
	}
	crd.ResourceVersion = stored.ResourceVersion
	return c.Update(ctx, crd)
}

// ReadCRDs reads every CustomResourceDefinition in the YAML files of dir.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading CRD directory: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", e.Name(), err)
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRD found in %s", dir)
	}
	return crds, nil
}

// InstallKubeflowCRD serves tfk8s's kubeflow.org TFJob CRD (config/crd/kubeflow) and
// enforces its admission policy (config/policy/kubeflow), which a test control plane
// does not install unless asked: a controller started afterwards finds the CRD served
// and reconciles those jobs too.
func (cp *ControlPlane) InstallKubeflowCRD(ctx context.Context) error {
	root, err := sourceRoot()
	if err != nil {
		return err
	}
	if err := cp.installCRDs(ctx, filepath.Join(root, "config", "crd", "kubeflow")); err != nil {
		return err
	}
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1",
		"kind":       "TFJob",
		"metadata":   map[string]any{"name": "policy-probe", "namespace": "default"},
		"spec": map[string]any{"tfReplicaSpecs": map[string]any{"Worker": map[string]any{"template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "tf"}}},
		}}}},
	}}
	return cp.installPoliciesProbed(ctx, filepath.Join(root, "config", "policy", "kubeflow"), probe, "container with name tensorflow")
}
