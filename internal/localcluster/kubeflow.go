package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/manifests"
)

// KubeflowCRD is the CRD of Kubeflow's kubeflow.org/v1 TFJob, which local mode serves
// beside tfk8s.io's own.
const KubeflowCRD = "tfjobs.kubeflow.org"

// kubeflowCRDDir holds the kubeflow.org CRD in the source tree around BinDir, apart
// from config/crd/bases so that the chart and kustomize serve it only when asked.
func kubeflowCRDDir(opts Options) string {
	return configDir(opts, "crd", "kubeflow")
}

// configDir is a directory of config/ in the source tree around BinDir or, as the
// control plane finds config/crd/bases when BinDir stands alone, around the working
// directory.
func configDir(opts Options, elem ...string) string {
	dir := filepath.Join(append([]string{filepath.Dir(opts.BinDir), "config"}, elem...)...)
	if existingDir(dir) != "" {
		return dir
	}
	if root, err := controlplane.SourceRoot(); err == nil {
		return filepath.Join(append([]string{root, "config"}, elem...)...)
	}
	return dir
}

// installKubeflowCRD serves kubeflow.org/v1 TFJob on a cluster whose controller runs
// on the host, so that Kubeflow's manifests and Python SDK work unchanged. It runs
// before the controller starts, which reconciles kubeflow.org TFJobs only when their
// CRD is served at its start. An install (helm, kustomize) serves the CRD itself.
func installKubeflowCRD(ctx context.Context, cp *controlplane.ControlPlane, opts Options, logf func(string, ...any)) error {
	if opts.Install != "" {
		return nil
	}
	crds, err := controlplane.ReadCRDs(kubeflowCRDDir(opts))
	if err != nil {
		return fmt.Errorf("reading the %s CRD: %w", KubeflowCRD, err)
	}
	for _, crd := range crds {
		// As the chart and config/kubeflow label it: a later up --install helm takes
		// it over instead of refusing it as another controller's.
		metav1.SetMetaDataLabel(&crd.ObjectMeta, "app.kubernetes.io/part-of", "tfk8s")
	}
	if err := cp.InstallCRDs(ctx, crds...); err != nil {
		return err
	}
	if err := applyKubeflowPolicy(ctx, cp, opts); err != nil {
		return err
	}
	logf("CRD %s installed with its admission policy: kubeflow.org/v1 TFJobs served", KubeflowCRD)
	return nil
}

// applyKubeflowPolicy applies config/policy/kubeflow: what training-operator's webhook
// checked of a kubeflow.org TFJob and the CRD's CEL budget cannot afford.
func applyKubeflowPolicy(ctx context.Context, cp *controlplane.ControlPlane, opts Options) error {
	dir := configDir(opts, "policy", "kubeflow")
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("no admission policy of kubeflow.org TFJobs in %s (%v)", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := manifests.Decode(data)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		objs = append(objs, found...)
	}
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	return applyObjects(ctx, c, objs)
}
