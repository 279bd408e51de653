package node

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewNode(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	info := hostInfo{CPUs: 4, MemoryBytes: 8 << 30, StorageBytes: 100 << 30, KernelVersion: "6.1", RuntimeVersion: "runc://1.1.5"}
	opts := Options{NodeName: "n1", NodeIP: "10.244.0.1", Port: 10250, GPUs: 2}
	n := newNode(opts, "10.244.0.0/24", info, now)

	wantCapacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		GPUResource:                     resource.MustParse("2"),
	}
	for name, want := range wantCapacity {
		got := n.Status.Capacity[name]
		if got.Cmp(want) != 0 {
			t.Errorf("capacity %s = %s, want %s", name, got.String(), want.String())
		}
		if alloc := n.Status.Allocatable[name]; alloc.Cmp(want) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, alloc.String(), want.String())
		}
	}
	if n.Spec.PodCIDR != "10.244.0.0/24" || !cmp.Equal(n.Spec.PodCIDRs, []string{"10.244.0.0/24"}) {
		t.Errorf("pod CIDR %q %v", n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	if diff := cmp.Diff([]corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.244.0.1"}}, n.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || n.Labels[corev1.LabelHostname] != "n1" {
		t.Errorf("kubelet port %d, hostname label %q", n.Status.DaemonEndpoints.KubeletEndpoint.Port, n.Labels[corev1.LabelHostname])
	}
	if n.Status.NodeInfo.KubeletVersion != KubeletVersion || n.Status.NodeInfo.ContainerRuntimeVersion != "runc://1.1.5" {
		t.Errorf("node info %+v", n.Status.NodeInfo)
	}
}

func TestNodeStatusConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	opts := Options{NodeName: "n1", NodeIP: "10.244.0.1", Port: 10250}
	ready := nodeStatus(opts, hostInfo{CPUs: 1}, true, "", t0, nil)
	stillReady := nodeStatus(opts, hostInfo{CPUs: 1}, true, "", t1, ready.Conditions)
	stopped := nodeStatus(opts, hostInfo{CPUs: 1}, false, "stopped", t1, ready.Conditions)
	find := func(conds []corev1.NodeCondition) corev1.NodeCondition {
		for _, c := range conds {
			if c.Type == corev1.NodeReady {
				return c
			}
		}
		return corev1.NodeCondition{}
	}
	if c := find(stillReady.Conditions); c.Status != corev1.ConditionTrue || c.LastTransitionTime != t0 || c.LastHeartbeatTime != t1 {
		t.Errorf("still ready: %+v, want True since t0, heartbeat t1", c)
	}
	if c := find(stopped.Conditions); c.Status != corev1.ConditionFalse || c.Reason != ReasonKubeletNotReady || c.Message != "stopped" || c.LastTransitionTime != t1 {
		t.Errorf("stopped: %+v, want False since t1", c)
	}
}
