package docs

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// toolModules names, for each version the Makefile sets, the module of hack/tools that
// pins it: the Makefile's names the stamp and the binary's version string, the
// go.mod's is what is built. A staging module (k8s.io/kubectl) is tagged v0.N.P for
// Kubernetes v1.N.P.
var toolModules = map[string]struct {
	dir, module string
	staging     bool
}{
	"KUBE_VERSION":                {"cluster", "k8s.io/kubernetes", false},
	"ETCD_VERSION":                {"cluster", "go.etcd.io/etcd/server/v3", false},
	"COREDNS_VERSION":             {"cluster", "github.com/coredns/coredns", false},
	"CONTAINERD_VERSION":          {"cluster", "github.com/containerd/containerd/v2", false},
	"CNI_PLUGINS_VERSION":         {"cluster", "github.com/containernetworking/plugins", false},
	"CONTROLLER_GEN_VERSION":      {"controller-gen", "sigs.k8s.io/controller-tools", false},
	"CRD_REF_DOCS_VERSION":        {"crd-ref-docs", "github.com/elastic/crd-ref-docs", false},
	"STATICCHECK_VERSION":         {"staticcheck", "honnef.co/go/tools", false},
	"VERSITYGW_VERSION":           {"versitygw", "github.com/versity/versitygw", false},
	"DISTRIBUTION_VERSION":        {"registry", "github.com/distribution/distribution/v3", false},
	"KUEUE_VERSION":               {"kueue", "sigs.k8s.io/kueue", false},
	"PROMETHEUS_OPERATOR_VERSION": {"prometheus-operator", "github.com/prometheus-operator/prometheus-operator", false},
	"PROMETHEUS_VERSION":          {"prometheus", "github.com/prometheus/prometheus", false},
	"METRICS_SERVER_VERSION":      {"metrics-server", "sigs.k8s.io/metrics-server", false},
	"TRAINING_OPERATOR_VERSION":   {"kubeflow-training-operator", "github.com/kubeflow/training-operator", false},
	"HELM_VERSION":                {"helm", "helm.sh/helm/v3", false},
	"KUSTOMIZE_VERSION":           {"kustomize", "sigs.k8s.io/kustomize/kustomize/v5", false},
	"KREW_VERSION":                {"krew", "sigs.k8s.io/krew", false},
	"KUBECTL_VERSION":             {"kubectl", "k8s.io/kubectl", true},
}

// unpinnedVersions are the Makefile's versions no hack/tools module pins, and why.
var unpinnedVersions = map[string]string{
	"KUBE_COMPAT_VERSION": "made of KUBE_COMPAT_MINOR; hack/tools/cluster-<minor> pins it",
	"PAUSE_VERSION":       "an image tag, built from hack/pause, not a Go module",
}

// TestEveryToolVersionIsChecked: a version the Makefile gains is either in
// toolModules or, with its reason, in unpinnedVersions, so that none goes unchecked.
func TestEveryToolVersionIsChecked(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^(\w+_VERSION) :?=`).FindAllSubmatch(makefile, -1) {
		name := string(m[1])
		if _, ok := toolModules[name]; !ok && unpinnedVersions[name] == "" {
			t.Errorf("the Makefile sets %s, which neither toolModules nor unpinnedVersions names", name)
		}
	}
}

// TestToolVersionsAgree: each tool version the Makefile writes is the one its
// hack/tools go.mod requires, so that a bump of one without the other fails here
// rather than building a binary whose stamp and version string lie.
func TestToolVersionsAgree(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(toolModules)) {
		tool := toolModules[name]
		m := regexp.MustCompile(`(?m)^` + name + ` := (\S+)$`).FindSubmatch(makefile)
		if m == nil {
			t.Errorf("the Makefile sets no %s", name)
			continue
		}
		gomod := filepath.Join(root, "hack", "tools", tool.dir, "go.mod")
		data, err := os.ReadFile(gomod)
		if err != nil {
			t.Error(err)
			continue
		}
		r := regexp.MustCompile(`(?m)^(?:require)?\s+` + regexp.QuoteMeta(tool.module) + ` (\S+)\s*$`).FindSubmatch(data)
		switch {
		case r == nil:
			t.Errorf("%s requires no %s (directly), whose version the Makefile's %s names", gomod, tool.module, name)
		case string(r[1]) != moduleVersion(string(m[1]), tool.staging):
			t.Errorf("the Makefile's %s is %s, but %s requires %s %s", name, m[1], gomod, tool.module, r[1])
		}
	}
}

// moduleVersion is the module version that a Makefile version means: a staging
// module's v0.N.P for Kubernetes's v1.N.P.
func moduleVersion(v string, staging bool) string {
	if rest, ok := strings.CutPrefix(v, "v1."); ok && staging {
		return "v0." + rest
	}
	return v
}
