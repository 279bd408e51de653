package localcluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestUpstreamNodeConfigs: the nodes' network comes first in the pod CIDR, each node's
// pods after it, and each node routes to the others' pods through their addresses.
func TestUpstreamNodeConfigs(t *testing.T) {
	opts := defaulted(t, Options{Nodes: 2, GPUs: 2, Ports: Ports{Registry: 15000}})
	configs := upstreamNodeConfigs(opts)
	if len(configs) != 2 {
		t.Fatalf("%d node configs, want 2", len(configs))
	}
	for _, c := range configs {
		if err := c.Check(); err != nil {
			t.Errorf("node %s's config is refused: %v", c.Name, err)
		}
	}
	type summary struct {
		Name, StateDir, Kubeconfig, Address, PodCIDR, ClusterCIDR, HostAddress, Mirror, DNS string
		Peers                                                                               []string
		GPUs                                                                                int
	}
	got := make([]summary, len(configs))
	for i, c := range configs {
		var peers []string
		for _, p := range c.Peers {
			peers = append(peers, p.PodCIDR.String()+" via "+p.Address.String())
		}
		got[i] = summary{c.Name, c.StateDir, c.Kubeconfig, c.Address.String(), c.PodCIDR.String(), c.ClusterCIDR.String(),
			c.HostAddress.String(), c.RegistryMirror, c.ClusterDNS.String(), peers, c.GPUs}
	}
	peer := func(addr, cidr string) []string { return []string{cidr + " via " + addr} }
	want := []summary{
		{"tfk8s-local", "/state/node", "/state/node/kubelet.kubeconfig", "10.244.0.2", "10.244.1.0/24", "10.244.0.0/22",
			"10.244.0.1/24", "http://10.244.0.1:15000", "10.96.0.10", peer("10.244.0.3", "10.244.2.0/24"), 2},
		{"tfk8s-local-2", "/state/node-2", "/state/node-2/kubelet.kubeconfig", "10.244.0.3", "10.244.2.0/24", "10.244.0.0/22",
			"10.244.0.1/24", "http://10.244.0.1:15000", "10.96.0.10", peer("10.244.0.2", "10.244.1.0/24"), 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node configs (-want +got):\n%s", diff)
	}
}

// TestGPUsAdvertised: up waits for a node's GPUs, which its device plugin registers
// after the node is Ready; a node without GPUs waits for nothing.
func TestGPUsAdvertised(t *testing.T) {
	node := func(gpus string) *corev1.Node {
		n := &corev1.Node{}
		if gpus != "" {
			n.Status.Allocatable = corev1.ResourceList{tfjob.GPUResource: resource.MustParse(gpus)}
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		gpus  int
		ready bool
	}{
		{"no GPUs asked, none offered", node(""), 0, true},
		{"GPUs asked, plugin not registered yet", node(""), 2, false},
		{"GPUs asked, plugin registered none yet", node("0"), 2, false},
		{"GPUs asked and offered", node("2"), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := gpusAdvertised(tc.node, tc.gpus); (err == nil) != tc.ready {
				t.Errorf("gpusAdvertised = %v, want ready %v", err, tc.ready)
			}
		})
	}
}
