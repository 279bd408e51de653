package install

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// serviceMonitorCRDDir is where make copies prometheus-operator's ServiceMonitor CRD,
// under the binaries' directory.
const serviceMonitorCRDDir = "prometheus-operator-crds"

// TestServiceMonitorIsAcceptedByItsCRD installs prometheus-operator's own ServiceMonitor
// CRD, applies the chart with its ServiceMonitor on, and reads back what the API server
// stored: the schema is enforced (an interval in words is refused), and the stored
// ServiceMonitor selects the metrics Service and names one of its ports, as
// prometheus-operator would resolve them.
func TestServiceMonitorIsAcceptedByItsCRD(t *testing.T) {
	crd := installServiceMonitorCRD(t)
	checkIntervalPattern(t, crd)
	createNamespace(t)
	tests := []struct {
		name         string
		values       string
		wantLabel    string // the value of the release label, if any
		wantInterval string // "" for none: Prometheus's global scrape interval
		wantErr      string // what the API server says when it refuses the ServiceMonitor
	}{{
		name:         "labels and interval",
		values:       `{metrics: {serviceMonitor: {enabled: true, interval: 15s, labels: {release: prometheus}}}}`,
		wantLabel:    "prometheus",
		wantInterval: "15s",
	}, {
		name:         "the default interval",
		values:       `{metrics: {serviceMonitor: {enabled: true}}}`,
		wantInterval: "30s",
	}, {
		name:   "no interval: Prometheus's global one",
		values: `{metrics: {serviceMonitor: {enabled: true, interval: ""}}}`,
	}, {
		name:    "an interval in words is refused",
		values:  `{metrics: {serviceMonitor: {enabled: true, interval: 5 minutes}}}`,
		wantErr: "spec.endpoints[0].interval in body should match",
	}, {
		name:    "an interval without a unit is refused",
		values:  `{metrics: {serviceMonitor: {enabled: true, interval: 30}}}`,
		wantErr: "spec.endpoints[0].interval in body should match",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChartValues(tc.values)
			if err != nil {
				t.Fatal(err)
			}
			sm := find(objs, "ServiceMonitor", "tfk8s-controller")
			if sm == nil {
				t.Fatal("the chart rendered no ServiceMonitor tfk8s-controller")
			}
			apply(t, "chart", slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return o == sm }))
			t.Cleanup(func() { deleteServiceMonitor(t, sm) })
			err = applyObject("chart", sm)
			if tc.wantErr != "" {
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("applying the ServiceMonitor: %v; want it refused as invalid, saying %q", err, tc.wantErr)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			stored := readBack(t, sm)
			var interval string
			if endpoints, _, _ := unstructured.NestedSlice(stored.Object, "spec", "endpoints"); len(endpoints) > 0 {
				interval, _ = endpoints[0].(map[string]any)["interval"].(string)
			}
			got := []string{stored.GetLabels()["release"], interval}
			if diff := cmp.Diff([]string{tc.wantLabel, tc.wantInterval}, got); diff != "" {
				t.Errorf("stored release label and interval (-want +got):\n%s", diff)
			}
			checkSelectsMetricsService(t, stored)
		})
	}
	t.Run("the job dashboard's sources", checkUsageServiceMonitors)
}

// installServiceMonitorCRD creates prometheus-operator's ServiceMonitor CRD, as
// installing kube-prometheus-stack does, and waits until it is served.
func installServiceMonitorCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	crds, err := controlplane.ReadCRDs(filepath.Join(bin, serviceMonitorCRDDir))
	if err != nil {
		t.Fatalf("reading prometheus-operator's ServiceMonitor CRD (make test copies it into bin/%s): %v", serviceMonitorCRDDir, err)
	}
	crd := crds[0]
	if err := cp.InstallCRDs(context.Background(), crd.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	t.Logf("CRD %s of prometheus-operator %s installed", crd.Name, crd.Annotations["operator.prometheus.io/version"])
	return crd
}

// checkIntervalPattern makes sure the CRD holds the pattern that must refuse an
// interval in words, so that the refusal the test expects shows the schema is enforced.
func checkIntervalPattern(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil {
		t.Fatalf("CRD %s: want one version with a schema, got %d versions", crd.Name, len(crd.Spec.Versions))
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	endpoints := spec.Properties["endpoints"]
	if endpoints.Items == nil || endpoints.Items.Schema == nil {
		t.Fatalf("CRD %s: spec.endpoints has no item schema", crd.Name)
	}
	pattern := endpoints.Items.Schema.Properties["interval"].Pattern
	re, err := regexp.Compile(pattern)
	if err != nil || re.MatchString("5 minutes") || re.MatchString("30") || !re.MatchString("15s") {
		t.Fatalf("CRD %s: spec.endpoints[].interval pattern %q (%v) does not tell 15s from \"5 minutes\" and \"30\"", crd.Name, pattern, err)
	}
	t.Logf("spec.endpoints[].interval pattern: %s", pattern)
}

// readBack returns the object the API server stored for o.
func readBack(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(o.GroupVersionKind())
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
		t.Fatalf("reading back %s: %v", identity(o), err)
	}
	return got
}

// deleteServiceMonitor deletes sm, so that each case starts from none.
func deleteServiceMonitor(t *testing.T, sm *unstructured.Unstructured) {
	t.Helper()
	if err := k8sClient.Delete(context.Background(), sm.DeepCopy()); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting %s: %v", identity(sm), err)
	}
}

// checkSelectsMetricsService resolves the stored ServiceMonitor as prometheus-operator
// does: the Services of its namespace that its selector matches must be the metrics
// Service alone, and its endpoint's port must be one of that Service's ports.
func checkSelectsMetricsService(t *testing.T, sm *unstructured.Unstructured) {
	t.Helper()
	raw, _, _ := unstructured.NestedMap(sm.Object, "spec", "selector")
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls); err != nil {
		t.Fatal(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || selector.Empty() {
		t.Fatalf("ServiceMonitor selector %v: %v; want one that selects the metrics Service only", raw, err)
	}
	var services corev1.ServiceList
	if err := k8sClient.List(context.Background(), &services, client.InNamespace(sm.GetNamespace()), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range services.Items {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"tfk8s-controller-metrics"}, names); diff != "" {
		t.Fatalf("Services the ServiceMonitor selects with %s (-want +got):\n%s", selector, diff)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	var ports []string
	for _, p := range services.Items[0].Spec.Ports {
		ports = append(ports, p.Name)
	}
	for _, e := range endpoints {
		if port := fmt.Sprint(e.(map[string]any)["port"]); !slices.Contains(ports, port) {
			t.Errorf("ServiceMonitor endpoint port %q is not a port of Service tfk8s-controller-metrics (%q)", port, ports)
		}
	}
	if len(endpoints) == 0 {
		t.Error("ServiceMonitor has no endpoint")
	}
	t.Logf("selects Service %s with %s, port %v", names[0], selector, ports)
}
