package install

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfk8s/tfk8s/internal/manifests"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var chartDir = filepath.Join(repoRoot, "charts", "tfk8s")

// renderChart renders the chart as helm install would, into tfk8s-system, with the
// given values over values.yaml: the CRDs of crds/ first, then the templates.
func renderChart(values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: "tfk8s", Namespace: systemNamespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("reading the chart's values: %w", err)
	}
	out, err := engine.Engine{Strict: true}.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	var all bytes.Buffer
	for _, crd := range ch.CRDObjects() {
		all.Write(crd.File.Data)
		all.WriteString("\n---\n")
	}
	names := make([]string, 0, len(out))
	for name := range out {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		all.WriteString(out[name])
		all.WriteString("\n---\n")
	}
	return manifests.Decode(all.Bytes())
}

// renderChartValues renders the chart with values written as YAML, as helm install -f
// would take them.
func renderChartValues(values string) ([]*unstructured.Unstructured, error) {
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		return nil, fmt.Errorf("reading values %s: %w", values, err)
	}
	return renderChart(vals)
}

// renderKustomize builds config/default as kubectl apply -k would.
func renderKustomize() ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		return nil, fmt.Errorf("building config/default: %w", err)
	}
	data, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("building config/default: %w", err)
	}
	return manifests.Decode(data)
}

// identities names each object "Kind namespace/name", sorted.
func identities(objs []*unstructured.Unstructured) []string {
	var ids []string
	for _, o := range objs {
		ids = append(ids, identity(o))
	}
	slices.Sort(ids)
	return ids
}

func identity(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/")
}

// find returns the object of that kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
