package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestDistributedJobGetsPodsServiceAndTFConfig creates a chief + 2 PS + 3 workers +
// evaluator job and checks every object it owns, printing each replica type's TF_CONFIG.
func TestDistributedJobGetsPodsServiceAndTFConfig(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("mnist", ns).Chief().PS(2).Workers(3).Evaluator().Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	names := []string{"mnist-chief-0", "mnist-ps-0", "mnist-ps-1", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2", "mnist-evaluator-0"}
	pods := waitPods(t, ns, "mnist", names...)

	cluster := map[string][]string{
		"chief":  {"mnist-chief-0.mnist." + ns + ".svc:2222"},
		"ps":     {"mnist-ps-0.mnist." + ns + ".svc:2222", "mnist-ps-1.mnist." + ns + ".svc:2222"},
		"worker": {"mnist-worker-0.mnist." + ns + ".svc:2222", "mnist-worker-1.mnist." + ns + ".svc:2222", "mnist-worker-2.mnist." + ns + ".svc:2222"},
	}
	type tfConfig struct {
		Cluster map[string][]string `json:"cluster"`
		Task    struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		} `json:"task"`
		Environment string `json:"environment"`
	}
	for _, name := range names {
		pod := pods[name]
		parts := strings.Split(name, "-")
		wantType, wantIndex := parts[1], parts[2]
		if diff := cmp.Diff(map[string]string{
			tfv1.LabelJobName: "mnist", tfv1.LabelReplicaType: wantType, tfv1.LabelReplicaIndex: wantIndex,
		}, pod.Labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", name, diff)
		}
		if pod.Spec.Hostname != name || pod.Spec.Subdomain != "mnist" {
			t.Errorf("%s: hostname %q subdomain %q, want %q and mnist", name, pod.Spec.Hostname, pod.Spec.Subdomain, name)
		}
		if !metav1.IsControlledBy(pod, job) {
			t.Errorf("%s is not controlled by the TFJob", name)
		}
		raw := envValue(pod, "TF_CONFIG")
		t.Logf("TF_CONFIG of %s: %s", name, raw)
		var got tfConfig
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("%s: TF_CONFIG is not JSON: %v", name, err)
		}
		if diff := cmp.Diff(cluster, got.Cluster); diff != "" {
			t.Errorf("%s: cluster (-want +got):\n%s", name, diff)
		}
		if got.Task.Type != wantType || fmt.Sprint(got.Task.Index) != wantIndex || got.Environment != "cloud" {
			t.Errorf("%s: task %+v environment %q", name, got.Task, got.Environment)
		}
	}

	// The Service follows the pods, once their creation pauses.
	svc := &corev1.Service{}
	testutil.Eventually(t, "the job's Service exists", func(ctx context.Context) (bool, error) {
		return true, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mnist"}, svc)
	})
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || !metav1.IsControlledBy(svc, job) {
		t.Errorf("service is not a headless Service of the job publishing not-ready addresses: %+v", svc.Spec)
	}
	services := &corev1.ServiceList{}
	if err := k8sClient.List(ctx, services, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(services.Items) != 1 {
		t.Errorf("the job has %d Services, want exactly one", len(services.Items))
	}

	got := waitCondition(t, ns, "mnist", tfv1.JobCreated)
	if got.Status.State != tfv1.JobCreated || got.Status.StartTime == nil {
		t.Errorf("state %q, start time %v; want Created and a start time", got.Status.State, got.Status.StartTime)
	}
	kubelet.SetRunning(t, ns, names...)
	got = waitCondition(t, ns, "mnist", tfv1.JobRunning)
	if diff := cmp.Diff(int32(3), replicaStatus(got, tfv1.ReplicaTypeWorker).Active); diff != "" {
		t.Errorf("active workers (-want +got):\n%s", diff)
	}
}

// TestSingleReplicaJobHasNoTFConfig: one worker runs TensorFlow locally.
func TestSingleReplicaJobHasNoTFConfig(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	if err := k8sClient.Create(context.Background(), testutil.MakeTFJob("single", ns).Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "single", "single-worker-0")
	if v := envValue(pods["single-worker-0"], "TF_CONFIG"); v != "" {
		t.Errorf("single-node job got TF_CONFIG %s", v)
	}
}

// TestHostNetworkGivesEveryReplicaItsOwnPort: two replicas on one node never collide.
func TestHostNetworkGivesEveryReplicaItsOwnPort(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	if err := k8sClient.Create(context.Background(), testutil.MakeTFJob("hostnet", ns).PS(1).Workers(2).HostNetwork().Obj()); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "hostnet", "hostnet-ps-0", "hostnet-worker-0", "hostnet-worker-1")
	ports := map[int32]string{}
	var cfg struct {
		Cluster map[string][]string `json:"cluster"`
	}
	for name, pod := range pods {
		if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
			t.Errorf("%s: hostNetwork %v dnsPolicy %s", name, pod.Spec.HostNetwork, pod.Spec.DNSPolicy)
		}
		var port corev1.ContainerPort
		for _, p := range pod.Spec.Containers[0].Ports {
			if p.Name == tfjob.PortName {
				port = p
			}
		}
		if port.HostPort == 0 || port.HostPort != port.ContainerPort {
			t.Errorf("%s: tfjob-port %+v, want equal host and container ports", name, port)
		}
		if other, dup := ports[port.HostPort]; dup {
			t.Errorf("%s and %s share port %d", name, other, port.HostPort)
		}
		ports[port.HostPort] = name
		if err := json.Unmarshal([]byte(envValue(pod, "TF_CONFIG")), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	for _, addr := range append(cfg.Cluster["ps"], cfg.Cluster["worker"]...) {
		host, port, _ := strings.Cut(addr, ":")
		name := strings.Split(host, ".")[0]
		if fmt.Sprint(pods[name].Spec.Containers[0].Ports[0].HostPort) != port {
			t.Errorf("TF_CONFIG gives %s port %s, its pod listens on %d", name, port, pods[name].Spec.Containers[0].Ports[0].HostPort)
		}
	}
}

func envValue(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return ""
}
