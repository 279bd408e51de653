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
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

var chartDir = filepath.Join(repoRoot, "charts", "tfk8s")

// renderChart renders the chart as helm install would, into tfk8s-system, with the
// given values over values.yaml: the CRDs of crds/ first, then the templates.
func renderChart(values map[string]any) ([]*unstructured.Unstructured, error) {
	return renderChartWith(engine.Engine{Strict: true}, values)
}

// renderChartOn renders the chart as helm install into the cluster of cfg would: its
// lookups read that cluster.
func renderChartOn(cfg *rest.Config, values map[string]any) ([]*unstructured.Unstructured, error) {
	e := engine.New(cfg)
	e.Strict = true
	return renderChartWith(e, values)
}

func renderChartWith(e engine.Engine, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: "tfk8s", Namespace: systemNamespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(ch, values, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("reading the chart's values: %w", err)
	}
	out, err := e.Render(ch, vals)
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
func renderKustomize() ([]*unstructured.Unstructured, error) { return renderKustomization("default") }

// renderKustomization builds config/<dir> as kubectl apply -k would.
func renderKustomization(dir string) ([]*unstructured.Unstructured, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot, "config", dir))
	if err != nil {
		return nil, fmt.Errorf("building config/%s: %w", dir, err)
	}
	data, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("building config/%s: %w", dir, err)
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
