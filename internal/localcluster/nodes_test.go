package localcluster

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestClusterNodes: the first node keeps a one-node cluster's names; each next one
// adds its number and takes the next network of the first's size.
func TestClusterNodes(t *testing.T) {
	opts := defaulted(t, Options{Nodes: 3, PodCIDR: "10.239.0.0/23", Bridge: "tfk8se6", NodeName: "n"})
	want := []clusterNode{
		{component: "tfk8s-node", name: "n", bridge: "tfk8se6", podCIDR: "10.239.0.0/23", stateDir: "/state/node", first: true},
		{component: "tfk8s-node-2", name: "n-2", bridge: "tfk8se6-2", podCIDR: "10.239.2.0/23", stateDir: "/state/node-2"},
		{component: "tfk8s-node-3", name: "n-3", bridge: "tfk8se6-3", podCIDR: "10.239.4.0/23", stateDir: "/state/node-3"},
	}
	if diff := cmp.Diff(want, clusterNodes(opts), cmp.AllowUnexported(clusterNode{})); diff != "" {
		t.Errorf("clusterNodes (-want +got):\n%s", diff)
	}
	wantOrder := []string{"tfk8s-node", "tfk8s-node-2", "tfk8s-node-3", compController, compScheduler,
		compControllerManager, compAPIServer, compDNS, compS3, compRegistry, compEtcd}
	if diff := cmp.Diff(wantOrder, stopOrderOf(opts)); diff != "" {
		t.Errorf("stopOrderOf (-want +got):\n%s", diff)
	}
	var kubelets []string
	for _, c := range components(opts) {
		if c.binary == compNode {
			kubelets = append(kubelets, c.name+" "+c.endpoints[0].String())
		}
	}
	wantKubelets := []string{"tfk8s-node 10.239.0.1:10250/tcp", "tfk8s-node-2 10.239.2.1:10250/tcp", "tfk8s-node-3 10.239.4.1:10250/tcp"}
	if diff := cmp.Diff(wantKubelets, kubelets); diff != "" {
		t.Errorf("the nodes' components (-want +got):\n%s", diff)
	}
}

// TestCheckPodCIDRsFree: a node's network may not overlap one the host routes through
// another interface; the cluster's own bridges and the default route do not count.
func TestCheckPodCIDRsFree(t *testing.T) {
	nodes := clusterNodes(defaulted(t, Options{Nodes: 2, PodCIDR: "10.239.0.0/24", Bridge: "br"}))
	route := func(dst, dev string) hostRoute { return hostRoute{dst: netip.MustParsePrefix(dst), dev: dev} }
	tests := []struct {
		name    string
		routes  []hostRoute
		wantErr string
	}{
		{name: "no routes"},
		{name: "default route and other networks", routes: []hostRoute{route("0.0.0.0/0", "eth0"), route("192.0.2.0/24", "eth0"), route("10.239.2.0/24", "tfk8s9")}},
		{name: "the cluster's own bridges", routes: []hostRoute{route("10.239.0.0/24", "br"), route("10.239.1.0/24", "br-2")}},
		{
			name:    "the second node's network on another bridge",
			routes:  []hostRoute{route("10.239.1.0/24", "tfk8s0")},
			wantErr: "pod network 10.239.1.0/24 of node tfk8s-local-2 overlaps 10.239.1.0/24, routed through tfk8s0: choose another --pod-cidr (2 nodes take 2 networks of its size from it)",
		},
		{
			name:    "a LAN holding the first node's network",
			routes:  []hostRoute{route("10.0.0.0/8", "eth1")},
			wantErr: "pod network 10.239.0.0/24 of node tfk8s-local overlaps 10.0.0.0/8, routed through eth1",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPodCIDRsFree(nodes, tc.routes)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestStaleNode: up deletes the Nodes of the nodes a smaller cluster no longer runs,
// and no other.
func TestStaleNode(t *testing.T) {
	opts := defaulted(t, Options{Nodes: 2, NodeName: "n"})
	var stale []string
	for _, name := range []string{"n", "n-2", "n-3", "n-10", "n-1", "n-03", "n-x", "other-3", "n-2-3", "nn-3"} {
		if staleNode(name, opts) {
			stale = append(stale, name)
		}
	}
	if diff := cmp.Diff([]string{"n-3", "n-10"}, stale); diff != "" {
		t.Errorf("stale nodes (-want +got):\n%s", diff)
	}
}
