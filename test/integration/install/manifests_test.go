package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/version"
)

// TestChartLints runs helm lint's checks on the chart, with its default values.
func TestChartLints(t *testing.T) {
	linter := lint.All(chartDir, nil, systemNamespace, false)
	for _, m := range linter.Messages {
		t.Log(m.Error())
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %v", m)
		}
	}
}

// TestChartAndKustomizeInstallTheSameObjects: both installs make the same objects, but
// the namespace, which Helm leaves to --create-namespace.
func TestChartAndKustomizeInstallTheSameObjects(t *testing.T) {
	chart, err := renderChart(nil)
	if err != nil {
		t.Fatal(err)
	}
	kust, err := renderKustomize()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ClusterRole tfk8s-controller",
		"ClusterRoleBinding tfk8s-controller",
		"CustomResourceDefinition tfjobs.tfk8s.io",
		"Deployment tfk8s-system/tfk8s-controller",
		"Namespace tfk8s-system",
		"PodDisruptionBudget tfk8s-system/tfk8s-controller",
		"Role tfk8s-system/tfk8s-leader-election",
		"RoleBinding tfk8s-system/tfk8s-leader-election",
		"Service tfk8s-system/tfk8s-controller-metrics",
		"ServiceAccount tfk8s-system/tfk8s-controller",
		"ValidatingAdmissionPolicy tfk8s-notebook-tfjob",
		"ValidatingAdmissionPolicy tfk8s-notebook-tfjob-claims",
		"ValidatingAdmissionPolicy tfk8s-tfjob",
		"ValidatingAdmissionPolicy tfk8s-tfjob-tenancy",
		"ValidatingAdmissionPolicyBinding tfk8s-notebook-tfjob",
		"ValidatingAdmissionPolicyBinding tfk8s-notebook-tfjob-claims",
		"ValidatingAdmissionPolicyBinding tfk8s-tfjob",
		"ValidatingAdmissionPolicyBinding tfk8s-tfjob-tenancy",
	}
	if diff := cmp.Diff(want, identities(kust)); diff != "" {
		t.Errorf("config/default objects (-want +got):\n%s", diff)
	}
	wantChart := append(want[:4:4], want[5:]...)
	if diff := cmp.Diff(wantChart, identities(chart)); diff != "" {
		t.Errorf("chart objects (-want +got):\n%s", diff)
	}
	for name, objs := range map[string][]*unstructured.Unstructured{"chart": chart, "config/default": kust} {
		checkDeployment(t, name, objs)
		checkGoMemLimit(t, objs)
		// The chart grants the rules on kubeflow.org with kubeflow.enabled alone
		// (TestKubeflowRenders).
		if diff := cmp.Diff(rulesWithoutKubeflow(find(kust, "ClusterRole", "tfk8s-controller")), rulesWithoutKubeflow(find(objs, "ClusterRole", "tfk8s-controller"))); diff != "" {
			t.Errorf("%s: ClusterRole rules differ from config/rbac/role.yaml (-want +got):\n%s", name, diff)
		}
	}
}

// checkDeployment checks the controller's Deployment is highly available and meets the
// restricted Pod Security level.
func checkDeployment(t *testing.T, source string, objs []*unstructured.Unstructured) {
	t.Helper()
	d := deployment(t, objs)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if *d.Spec.Replicas != 2 || !strings.Contains(strings.Join(c.Args, " "), "--leader-elect") {
		t.Errorf("%s: %d replicas, args %q: want 2 replicas electing a leader", source, *d.Spec.Replicas, c.Args)
	}
	if spec.ServiceAccountName != serviceAccount {
		t.Errorf("%s: service account %q, want %q", source, spec.ServiceAccountName, serviceAccount)
	}
	wantPod := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if diff := cmp.Diff(wantPod, spec.SecurityContext); diff != "" {
		t.Errorf("%s: pod securityContext (-want +got):\n%s", source, diff)
	}
	wantContainer := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if diff := cmp.Diff(wantContainer, c.SecurityContext); diff != "" {
		t.Errorf("%s: container securityContext (-want +got):\n%s", source, diff)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: want liveness on /healthz and readiness on /readyz, got %+v and %+v", source, c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("%s: resources %+v: want CPU and memory requests and a memory limit", source, c.Resources)
	}
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	u := find(objs, "Deployment", "tfk8s-controller")
	if u == nil {
		t.Fatal("no Deployment tfk8s-controller")
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestChartValues renders the chart with a user's values and checks what they change.
func TestChartValues(t *testing.T) {
	tests := []struct {
		name    string
		values  string
		wantErr string
		check   func(t *testing.T, objs []*unstructured.Unstructured)
	}{{
		name:   "images of one release by default",
		values: `{}`,
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkImages(t, objs, "ghcr.io/tfk8s/tfk8s-controller:"+version.Version, controller.DefaultAgentImage)
		},
	}, {
		name:   "the Go heap kept within the memory limit",
		values: `{}`,
		check:  checkGoMemLimit,
	}, {
		name:   "images from another registry",
		values: `{image: {repository: registry.example/tfk8s-controller, tag: v9}, agentImage: {repository: registry.example/tfk8s-agent, tag: v9}}`,
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			checkImages(t, objs, "registry.example/tfk8s-controller:v9", "registry.example/tfk8s-agent:v9")
		},
	}, {
		name:   "scheduling and replicas",
		values: `{replicas: 3, nodeSelector: {pool: system}, tolerations: [{key: dedicated, operator: Exists}], resources: {limits: {memory: 1Gi}}}`,
		check:  checkScheduling,
	}, {
		name:   "TensorBoard image and gang scheduler",
		values: `{tensorBoardImage: registry.example/tensorflow:2.21.0, gangScheduler: volcano}`,
		check:  checkArgs(true, "--tensorboard-image=registry.example/tensorflow:2.21.0", "--gang-scheduler=volcano"),
	}, {
		name:   "TF_CONFIG composed by the agent for every multi-replica job",
		values: `{compactTFConfigAbove: 0}`,
		check:  checkArgs(true, "--compact-tf-config-above=0"),
	}, {
		name:   "TF_CONFIG size left to the controller's default",
		values: `{}`,
		check:  checkArgs(false, "--compact-tf-config-above"),
	}, {
		name:    "a negative TF_CONFIG size",
		values:  `{compactTFConfigAbove: -1}`,
		wantErr: "is not a size in bytes",
	}, {
		name:   "ServiceMonitor on",
		values: `{metrics: {serviceMonitor: {enabled: true, labels: {release: prometheus}}}}`,
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			sm := find(objs, "ServiceMonitor", "tfk8s-controller")
			if sm == nil || sm.GetLabels()["release"] != "prometheus" {
				t.Fatalf("want a ServiceMonitor labelled release=prometheus, got %v", sm)
			}
			checkServiceMonitorScrapesController(t, objs, sm)
		},
	}, {
		name:   "Grafana dashboard on",
		values: `{metrics: {grafanaDashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: tfk8s}}}}`,
		check:  checkGrafanaConfigMap,
	}, {
		name:   "the dashboard's /metrics behind its sign-in by default",
		values: `{dashboard: {enabled: true}}`,
		check:  checkDashboardArgs(false, "--metrics-unauthenticated"),
	}, {
		name:   "the dashboard's /metrics open to a scraper",
		values: `{dashboard: {enabled: true, metrics: {unauthenticated: true}}}`,
		check:  checkDashboardArgs(true, "--metrics-unauthenticated"),
	}, {
		name:   "the dashboard's ingress trusted to name the client",
		values: `{dashboard: {enabled: true, trustedProxies: [10.0.0.0/8]}}`,
		check:  checkDashboardArgs(true, "--trusted-proxy=10.0.0.0/8"),
	}, {
		name:   "jobs gauge by namespace",
		values: `{metrics: {jobsByNamespace: true}}`,
		check: func(t *testing.T, objs []*unstructured.Unstructured) {
			if args := deployment(t, objs).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--metrics-jobs-by-namespace") {
				t.Errorf("controller args %q lack --metrics-jobs-by-namespace", args)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChartValues(tc.values)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, objs)
		})
	}
}

// checkServiceMonitorScrapesController checks that the ServiceMonitor selects the
// metrics Service, names one of its ports, and that the port leads to the
// controller's metrics port.
func checkServiceMonitorScrapesController(t *testing.T, objs []*unstructured.Unstructured, sm *unstructured.Unstructured) {
	t.Helper()
	u := find(objs, "Service", "tfk8s-controller-metrics")
	svc := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, svc); err != nil {
		t.Fatal(err)
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s; the metrics Service has %s=%q", k, v, k, svc.Labels[k])
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	port := endpoints[0].(map[string]any)["port"]
	c := deployment(t, objs).Spec.Template.Spec.Containers[0]
	for _, p := range svc.Spec.Ports {
		for _, cp := range c.Ports {
			if p.Name == port && cp.Name == p.TargetPort.StrVal &&
				slices.Contains(c.Args, fmt.Sprintf("--metrics-bind-address=:%d", cp.ContainerPort)) {
				return
			}
		}
	}
	t.Errorf("ServiceMonitor port %v leads to no container port serving metrics (Service ports %+v, container ports %+v, args %q)",
		port, svc.Spec.Ports, c.Ports, c.Args)
}

// checkImages checks the controller's image and the agent image it injects.
func checkImages(t *testing.T, objs []*unstructured.Unstructured, controllerImage, agentImage string) {
	t.Helper()
	c := deployment(t, objs).Spec.Template.Spec.Containers[0]
	got := []string{c.Image}
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--agent-image="); ok {
			got = append(got, v)
		}
	}
	if diff := cmp.Diff([]string{controllerImage, agentImage}, got); diff != "" {
		t.Errorf("controller image and --agent-image (-want +got):\n%s", diff)
	}
}

// TestChartCopiesMatchConfig: the chart's CRD, admission policy and ClusterRole are the
// files under config/ (make chart copies them).
func TestChartCopiesMatchConfig(t *testing.T) {
	for copy, orig := range map[string]string{
		"crds/tfk8s.io_tfjobs.yaml":        "config/crd/bases/tfk8s.io_tfjobs.yaml",
		"files/tfjob-policy.yaml":          "config/policy/tfjob-policy.yaml",
		"files/notebook-tfjob-policy.yaml": "config/policy/notebook-tfjob-policy.yaml",
		"files/role.yaml":                  "config/rbac/role.yaml",
		"files/kubeflow.org_tfjobs.yaml":   "config/crd/kubeflow/kubeflow.org_tfjobs.yaml",
		"files/kubeflow-tfjob-policy.yaml": "config/policy/kubeflow/kubeflow-tfjob-policy.yaml",
		"files/tfk8s-controller.json":      "config/grafana/tfk8s-controller.json",
		"files/tfk8s-job.json":             "config/grafana/tfk8s-job.json",
	} {
		a, err1 := os.ReadFile(filepath.Join(chartDir, copy))
		b, err2 := os.ReadFile(filepath.Join(repoRoot, orig))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/tfk8s/%s differs from %s: run make chart", copy, orig)
		}
	}
}

// TestVersionIsWrittenOnce: the chart's appVersion and config/default's image tag are
// internal/version's Version.
func TestVersionIsWrittenOnce(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var kust struct {
		Images []struct {
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	for path, into := range map[string]any{
		filepath.Join(chartDir, "Chart.yaml"):                              &chart,
		filepath.Join(repoRoot, "config", "manager", "kustomization.yaml"): &kust,
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	got := []string{chart.AppVersion}
	for _, img := range kust.Images {
		got = append(got, img.NewTag)
	}
	if diff := cmp.Diff([]string{version.Version, version.Version}, got); diff != "" {
		t.Errorf("Chart.yaml appVersion and config/manager newTag, want internal/version's (-want +got):\n%s", diff)
	}
}

// checkArgs wants each of args among the controller's arguments (as a prefix of one),
// or, with want false, none of them.
func checkArgs(want bool, args ...string) func(t *testing.T, objs []*unstructured.Unstructured) {
	return func(t *testing.T, objs []*unstructured.Unstructured) {
		got := deployment(t, objs).Spec.Template.Spec.Containers[0].Args
		for _, arg := range args {
			if has := slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, arg) }); has != want {
				t.Errorf("controller args %q: holding %s is %v, want %v", got, arg, has, want)
			}
		}
	}
}

// checkDashboardArgs wants the dashboard's arguments to hold arg, or not.
func checkDashboardArgs(want bool, arg string) func(t *testing.T, objs []*unstructured.Unstructured) {
	return func(t *testing.T, objs []*unstructured.Unstructured) {
		u := find(objs, "Deployment", "tfk8s-dashboard")
		if u == nil {
			t.Fatal("no Deployment tfk8s-dashboard")
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		if has := slices.Contains(args, arg); has != want {
			t.Errorf("dashboard args %q: holding %s is %v, want %v", args, arg, has, want)
		}
	}
}

// checkScheduling wants the Deployment's replicas, node selector, tolerations and
// memory limit those the values set.
func checkScheduling(t *testing.T, objs []*unstructured.Unstructured) {
	d := deployment(t, objs)
	s := d.Spec.Template.Spec
	got := []any{*d.Spec.Replicas, s.NodeSelector, s.Tolerations, s.Containers[0].Resources.Limits.Memory().String()}
	want := []any{int32(3), map[string]string{"pool": "system"}, []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}, "1Gi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// checkGoMemLimit wants the controller given its memory limit, of which it gives the
// Go runtime a share.
func checkGoMemLimit(t *testing.T, objs []*unstructured.Unstructured) {
	want := []corev1.EnvVar{{Name: "TFK8S_MEMORY_LIMIT", ValueFrom: &corev1.EnvVarSource{
		ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "controller", Resource: "limits.memory"}}}}
	if diff := cmp.Diff(want, deployment(t, objs).Spec.Template.Spec.Containers[0].Env); diff != "" {
		t.Errorf("controller env: want TFK8S_MEMORY_LIMIT from the memory limit (-want +got):\n%s", diff)
	}
}

// checkGrafanaConfigMap wants the Grafana dashboard shipped as config/grafana has it, in
// a ConfigMap where Grafana's sidecar finds it.
func checkGrafanaConfigMap(t *testing.T, objs []*unstructured.Unstructured) {
	cm := find(objs, "ConfigMap", "tfk8s-grafana-dashboard")
	if cm == nil {
		t.Fatal("no ConfigMap tfk8s-grafana-dashboard")
	}
	got := []string{cm.GetNamespace(), cm.GetLabels()["grafana_dashboard"], cm.GetAnnotations()["grafana_folder"]}
	if diff := cmp.Diff([]string{"monitoring", "1", "tfk8s"}, got); diff != "" {
		t.Errorf("namespace, grafana_dashboard label, folder annotation (-want +got):\n%s", diff)
	}
	for _, name := range []string{"tfk8s-controller.json", "tfk8s-job.json"} {
		want, err := os.ReadFile(filepath.Join(repoRoot, "config", "grafana", name))
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedString(cm.Object, "data", name)
		if data != strings.TrimSuffix(string(want), "\n") || !json.Valid([]byte(data)) {
			t.Errorf("the ConfigMap's dashboard %s (%d bytes) is not config/grafana/%s (%d bytes)", name, len(data), name, len(want))
		}
	}
}
