package localcluster

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestClusterNodes: the first node keeps a one-node cluster's names; each next one
// adds its number; all join one bridge, and each node's pods take the network of the
// pod CIDR's size after the one before, the first after the nodes' own.
func TestClusterNodes(t *testing.T) {
	opts := defaulted(t, Options{Nodes: 3, PodCIDR: "10.239.0.0/23", Bridge: "tfk8se6", NodeName: "n"})
	want := []clusterNode{
		{component: "tfk8s-node", name: "n", bridge: "tfk8se6", podCIDR: "10.239.2.0/23", stateDir: "/state/node"},
		{component: "tfk8s-node-2", name: "n-2", bridge: "tfk8se6", podCIDR: "10.239.4.0/23", stateDir: "/state/node-2"},
		{component: "tfk8s-node-3", name: "n-3", bridge: "tfk8se6", podCIDR: "10.239.6.0/23", stateDir: "/state/node-3"},
	}
	if diff := cmp.Diff(want, clusterNodes(opts), cmp.AllowUnexported(clusterNode{})); diff != "" {
		t.Errorf("clusterNodes (-want +got):\n%s", diff)
	}
	wantOrder := []string{"tfk8s-node", "tfk8s-node-2", "tfk8s-node-3", compController, compMetricsServer, compScheduler,
		compControllerManager, compAPIServer, compDNS, compS3, compRegistry, compEtcd}
	if diff := cmp.Diff(wantOrder, stopOrderOf(opts)); diff != "" {
		t.Errorf("stopOrderOf (-want +got):\n%s", diff)
	}
	kubelets := upstreamKubeletAddrs(opts)
	wantKubelets := map[string]string{"tfk8s-node": "10.239.0.2:10250", "tfk8s-node-2": "10.239.0.3:10250", "tfk8s-node-3": "10.239.0.4:10250"}
	if diff := cmp.Diff(wantKubelets, kubelets); diff != "" {
		t.Errorf("the nodes' kubelet addresses (-want +got):\n%s", diff)
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
		{name: "default route and other networks", routes: []hostRoute{route("0.0.0.0/0", "eth0"), route("192.0.2.0/24", "eth0"), route("10.239.3.0/24", "tfk8s9")}},
		{name: "the cluster's own bridge", routes: []hostRoute{route("10.239.0.0/24", "br"), route("10.239.1.0/24", "br"), route("10.239.2.0/24", "br")}},
		{
			name:    "the second node's network on another bridge",
			routes:  []hostRoute{route("10.239.2.0/24", "tfk8s0")},
			wantErr: "pod network 10.239.2.0/24 of node tfk8s-local-2 overlaps 10.239.2.0/24, routed through tfk8s0: choose another --pod-cidr (2 nodes take 2 networks of its size from it)",
		},
		{
			name:    "a LAN holding the first node's network",
			routes:  []hostRoute{route("10.0.0.0/8", "eth1")},
			wantErr: "pod network 10.239.1.0/24 of node tfk8s-local overlaps 10.0.0.0/8, routed through eth1",
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

// TestCheckNodes: what the nodes derive from the options is checked up front.
func TestCheckNodes(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{name: "no node", opts: Options{Nodes: -1}, wantErr: "--nodes -1: want at least 1"},
		{
			name:    "nodes' networks beyond IPv4",
			opts:    Options{PodCIDR: "255.255.254.0/24", Nodes: 2},
			wantErr: "2 nodes need the nodes' own network and one each: --pod-cidr 255.255.254.0/24: 3 networks of its size from it go beyond 255.255.255.255",
		},
		{name: "several nodes without a node", opts: Options{Nodes: 2, WithoutNode: true}, wantErr: "a cluster without a node has none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Dir, tc.opts.BinDir = "/state", "/bin"
			_, err := tc.opts.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestMergeNodes: a running cluster keeps its number of nodes; a stopped one takes
// the new number; one saved before --nodes has one.
func TestMergeNodes(t *testing.T) {
	saved := settings{NodeName: "n1", PodCIDR: "10.9.0.0/24", Bridge: "br9", Nodes: 2, Ports: DefaultPorts}
	tests := []struct {
		name    string
		saved   settings
		nodes   int
		running bool
		want    int
		wantErr string
	}{
		{name: "kept while running", saved: saved, running: true, want: 2},
		{name: "another number while running", saved: saved, nodes: 3, running: true, wantErr: "--nodes is 2, not 3"},
		{name: "another number when nothing runs", saved: saved, nodes: 1, want: 1},
		{name: "saved before --nodes", saved: settings{NodeName: "n1", Ports: DefaultPorts}, running: true, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mergeSettings(Options{Nodes: tc.nodes}, tc.saved, tc.running)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "run tfk8s local down first") {
					t.Fatalf("error = %v, want one containing %q and what to do", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Nodes != tc.want {
				t.Errorf("nodes = %d, %v; want %d", got.Nodes, err, tc.want)
			}
		})
	}
}
