package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// toolModules names, for each version the Makefile sets, the module of hack/tools that
// pins it: the Makefile's names the stamp and the binary's version string, the
// go.mod's is what is built.
var toolModules = map[string]struct{ dir, module string }{
	"KUBE_VERSION":                {"cluster", "k8s.io/kubernetes"},
	"ETCD_VERSION":                {"cluster", "go.etcd.io/etcd/server/v3"},
	"COREDNS_VERSION":             {"cluster", "github.com/coredns/coredns"},
	"CONTAINERD_VERSION":          {"cluster", "github.com/containerd/containerd/v2"},
	"CNI_PLUGINS_VERSION":         {"cluster", "github.com/containernetworking/plugins"},
	"CONTROLLER_GEN_VERSION":      {"controller-gen", "sigs.k8s.io/controller-tools"},
	"CRD_REF_DOCS_VERSION":        {"crd-ref-docs", "github.com/elastic/crd-ref-docs"},
	"STATICCHECK_VERSION":         {"staticcheck", "honnef.co/go/tools"},
	"VERSITYGW_VERSION":           {"versitygw", "github.com/versity/versitygw"},
	"DISTRIBUTION_VERSION":        {"registry", "github.com/distribution/distribution/v3"},
	"KUEUE_VERSION":               {"kueue", "sigs.k8s.io/kueue"},
	"PROMETHEUS_OPERATOR_VERSION": {"prometheus-operator", "github.com/prometheus-operator/prometheus-operator"},
	"PROMETHEUS_VERSION":          {"prometheus", "github.com/prometheus/prometheus"},
	"TRAINING_OPERATOR_VERSION":   {"kubeflow-training-operator", "github.com/kubeflow/training-operator"},
}

// TestToolVersionsAgree: each tool version the Makefile writes is the one its
// hack/tools go.mod requires, so that a bump of one without the other fails here
// rather than building a binary whose stamp and version string lie.
func TestToolVersionsAgree(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tool := range toolModules {
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
		case string(r[1]) != string(m[1]):
			t.Errorf("the Makefile's %s is %s, but %s requires %s %s", name, m[1], gomod, tool.module, r[1])
		}
	}
}
