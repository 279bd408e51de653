package localcluster

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tfk8s/tfk8s/internal/manifests"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// TestInstallRunsNoControllerProcess: with an install, the controller runs as pods,
// so it is no component of its own (up starts no process, status lists none).
func TestInstallRunsNoControllerProcess(t *testing.T) {
	for _, tc := range []struct {
		install string
		want    bool
	}{{"", true}, {InstallHelm, false}, {InstallKustomize, false}} {
		opts, err := Options{Dir: "/state", BinDir: "/bin", Install: tc.install}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		got := slices.ContainsFunc(components(opts), func(c component) bool { return c.name == compController })
		if got != tc.want {
			t.Errorf("install %q: a %s component = %v, want %v", tc.install, compController, got, tc.want)
		}
	}
}

// TestCheckInstallSource: an install needs its tool in bin/ and its source beside it,
// and says how to get what is missing.
func TestCheckInstallSource(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	for _, d := range []string{bin, filepath.Join(root, "charts", "tfk8s")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "helm"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		install, wantErr string
	}{
		{install: ""},
		{install: InstallHelm},
		{install: InstallKustomize, wantErr: "--install kustomize needs " + filepath.Join(bin, "kustomize") + ": run make install-tools"},
	} {
		err := checkInstallSource(Options{BinDir: bin, Install: tc.install})
		if got := errString(err); got != tc.wantErr {
			t.Errorf("install %q: error %q, want %q", tc.install, got, tc.wantErr)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "kustomize"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	err := checkInstallSource(Options{BinDir: bin, Install: InstallKustomize})
	if want := "--install kustomize needs " + filepath.Join(root, "config", "kubeflow"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("without config/kubeflow: error %v, want one starting %q", err, want)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDeploymentAvailable(t *testing.T) {
	available := func(status corev1.ConditionStatus) []appsv1.DeploymentCondition {
		return []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: status}}
	}
	rolledOut := appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, Conditions: available(corev1.ConditionTrue)}
	for _, tc := range []struct {
		name   string
		status appsv1.DeploymentStatus
		want   bool
	}{
		{name: "rolled out and available", status: rolledOut, want: true},
		{name: "an older generation observed", status: func() appsv1.DeploymentStatus { s := rolledOut; s.ObservedGeneration = 1; return s }()},
		{name: "one replica not ready", status: func() appsv1.DeploymentStatus { s := rolledOut; s.ReadyReplicas = 1; return s }()},
		{name: "an old replica still there", status: func() appsv1.DeploymentStatus { s := rolledOut; s.Replicas = 3; return s }()},
		{name: "not available", status: func() appsv1.DeploymentStatus {
			s := rolledOut
			s.Conditions = available(corev1.ConditionFalse)
			return s
		}()},
		{name: "no condition yet", status: func() appsv1.DeploymentStatus { s := rolledOut; s.Conditions = nil; return s }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}, Status: tc.status}
			if got := deploymentAvailable(d); got != tc.want {
				t.Errorf("deploymentAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestApplyOrder: namespaces and CRDs first, the rest in the order kustomize wrote it.
func TestApplyOrder(t *testing.T) {
	objs, err := manifests.Decode([]byte(`apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: tfk8s-system}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tfjobs.tfk8s.io}
---
# an empty document
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: tfk8s-controller, namespace: tfk8s-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: tfk8s-system}
`))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyRank(a) - applyRank(b) })
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind())
	}
	if diff := cmp.Diff([]string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "Deployment"}, got); diff != "" {
		t.Errorf("apply order (-want +got):\n%s", diff)
	}
}

func TestInstallStatusPrint(t *testing.T) {
	st := &InstallStatus{Method: InstallHelm, Leader: "tfk8s-controller-b", Pods: []ControllerPod{
		{Name: "tfk8s-controller-a", IP: "10.244.0.2", State: "Running", Ready: true},
		{Name: "tfk8s-controller-b", IP: "10.244.0.3", State: "Running", Ready: true},
	}}
	var out bytes.Buffer
	st.print(&out)
	want := `tfk8s-controller: installed with helm in namespace tfk8s-system (deployment tfk8s-controller)
  POD                 READY  STATUS   IP          LEADER
  tfk8s-controller-a  true   Running  10.244.0.2  
  tfk8s-controller-b  true   Running  10.244.0.3  yes
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	out.Reset()
	(&InstallStatus{Method: InstallKustomize, Err: errors.New("connection refused")}).print(&out)
	if !strings.Contains(out.String(), "its pods cannot be read: connection refused") {
		t.Errorf("status of an unreachable cluster:\n%s", out.String())
	}
}
