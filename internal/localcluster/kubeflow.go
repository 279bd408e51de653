package localcluster

import (
	"context"
	"fmt"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// KubeflowCRD is the CRD of Kubeflow's kubeflow.org/v1 TFJob, which local mode serves
// beside tfk8s.io's own.
const KubeflowCRD = "tfjobs.kubeflow.org"

// kubeflowCRDDir holds the kubeflow.org CRD in the source tree around BinDir, apart
// from config/crd/bases so that the chart and kustomize serve it only when asked.
func kubeflowCRDDir(opts Options) string {
	return filepath.Join(filepath.Dir(opts.BinDir), "config", "crd", "kubeflow")
}

// installKubeflowCRD serves kubeflow.org/v1 TFJob on a cluster whose controller runs
// on the host, so that Kubeflow's manifests and Python SDK work unchanged. It runs
// before the controller starts, which reconciles kubeflow.org TFJobs only when their
// CRD is served at its start. An install (helm, kustomize) serves the CRD itself.
func (u *starter) installKubeflowCRD(ctx context.Context, cp *controlplane.ControlPlane) error {
	if u.opts.Install != "" {
		return nil
	}
	crds, err := controlplane.ReadCRDs(kubeflowCRDDir(u.opts))
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
	u.logf("CRD %s installed: kubeflow.org/v1 TFJobs served", KubeflowCRD)
	return nil
}
