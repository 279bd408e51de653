package install

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkUsageServiceMonitors: the ServiceMonitors of the Grafana job dashboard's
// sources (the kubelet's cAdvisor, DCGM exporter) are off by default, and on they are
// accepted by prometheus-operator's CRD as the chart writes them: the stored
// endpoint scrapes cAdvisor's path over https with the pods' own namespace and pod
// labels, DCGM exporter's without honouring its labels, each in its one namespace, and
// keeps only the series the dashboard reads.
func checkUsageServiceMonitors(t *testing.T) {
	objs, err := renderChartValues(`{}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tfk8s-cadvisor", "tfk8s-dcgm-exporter"} {
		if find(objs, "ServiceMonitor", name) != nil {
			t.Errorf("ServiceMonitor %s rendered by default; want it off", name)
		}
	}
	objs, err = renderChartValues(`{metrics: {cadvisor: {serviceMonitor: {enabled: true}}, dcgmExporter: {serviceMonitor: {enabled: true}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"tfk8s-cadvisor":      {"https-metrics", "https", "/metrics/cadvisor", "true", "container_cpu_usage_seconds_total|container_memory_working_set_bytes"},
		"tfk8s-dcgm-exporter": {"metrics", "", "", "", "DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED"},
	}
	// Each scrapes its exporter's one namespace: a tenant's Service labelled as DCGM
	// exporter's elsewhere must not be scraped, nor its labels honoured.
	namespaces := map[string]string{"tfk8s-cadvisor": "kube-system", "tfk8s-dcgm-exporter": "gpu-operator"}
	for name, want := range want {
		sm := find(objs, "ServiceMonitor", name)
		if sm == nil {
			t.Fatalf("the chart rendered no ServiceMonitor %s", name)
		}
		if err := applyObject("chart", sm); err != nil {
			t.Fatalf("applying ServiceMonitor %s: %v", name, err)
		}
		t.Cleanup(func() { deleteServiceMonitor(t, sm) })
		stored := readBack(t, sm)
		endpoints, _, _ := unstructured.NestedSlice(stored.Object, "spec", "endpoints")
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor %s stored %d endpoints, want 1", name, len(endpoints))
		}
		matchNames, _, _ := unstructured.NestedStringSlice(stored.Object, "spec", "namespaceSelector", "matchNames")
		if anyNS, _, _ := unstructured.NestedBool(stored.Object, "spec", "namespaceSelector", "any"); anyNS || !cmp.Equal(matchNames, []string{namespaces[name]}) {
			t.Errorf("ServiceMonitor %s selects namespaces %v (any: %v), want only %s", name, matchNames, anyNS, namespaces[name])
		}
		e := endpoints[0].(map[string]any)
		relabel, _ := e["metricRelabelings"].([]any)
		var keep string
		if len(relabel) >= 1 && relabel[0].(map[string]any)["action"] == "keep" {
			keep, _ = relabel[0].(map[string]any)["regex"].(string)
		}
		got := []string{str(e["port"]), str(e["scheme"]), str(e["path"]), str(e["honorLabels"]), keep}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ServiceMonitor %s endpoint port, scheme, path, honorLabels, kept series (-want +got):\n%s", name, diff)
		}
	}
}

// str is a stored field as text, "" when absent.
func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	}
	return ""
}
