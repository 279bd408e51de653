package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterNode is one node of a local cluster. The first is named as a one-node
// cluster's always was (Options.NodeName, process tfk8s-node, state in node/); node i
// (from 2) adds "-i" to each name and takes the pod network after the one before it,
// so that a cluster grown to more nodes keeps its first one as it was.
type clusterNode struct {
	// component names the node's process: its pid file and log.
	component string
	// name is the Node's name.
	name string
	// bridge is the host bridge the node joins, podCIDR its pods' network.
	bridge, podCIDR string
	// stateDir is the node's state directory, under the cluster's.
	stateDir string
}

// nodeSuffix is what node i (counted from 0) adds to the first node's names.
func nodeSuffix(i int) string {
	if i == 0 {
		return ""
	}
	return "-" + strconv.Itoa(i+1)
}

// clusterNodes lists the cluster's nodes, as opts (checked by withDefaults) asks.
func clusterNodes(opts Options) []clusterNode {
	count := max(opts.Nodes, 1)
	cidrs, err := nodePodCIDRs(opts.PodCIDR, count+1) // checked by withDefaults
	p := pathsIn(opts.Dir)
	nodes := make([]clusterNode, count)
	for i := range nodes {
		cidr := opts.PodCIDR
		if err == nil {
			cidr = cidrs[i+1].String() // after the nodes' own network
		}
		nodes[i] = clusterNode{
			component: compNode + nodeSuffix(i),
			name:      opts.NodeName + nodeSuffix(i),
			bridge:    opts.Bridge,
			podCIDR:   cidr,
			stateDir:  p.nodeState + nodeSuffix(i),
		}
	}
	return nodes
}

// nodeComponents are the names of the processes of the cluster's nodes.
func nodeComponents(opts Options) []string {
	var names []string
	for _, n := range clusterNodes(opts) {
		names = append(names, n.component)
	}
	return names
}

// nodePodCIDRs splits the pod networks of n nodes off first: first itself, then each
// next network of the same size. They must stay inside IPv4's address space.
func nodePodCIDRs(first string, n int) ([]netip.Prefix, error) {
	prefix, err := netip.ParsePrefix(first)
	if err != nil {
		return nil, fmt.Errorf("parsing pod CIDR %q: %w", first, err)
	}
	prefix = prefix.Masked()
	size := uint64(1) << (32 - prefix.Bits())
	base := prefix.Addr().As4()
	start := uint64(base[0])<<24 | uint64(base[1])<<16 | uint64(base[2])<<8 | uint64(base[3])
	if last := start + uint64(n)*size - 1; last > 0xffffffff {
		return nil, fmt.Errorf("--pod-cidr %s: %d networks of its size from it go beyond 255.255.255.255", first, n)
	}
	out := make([]netip.Prefix, n)
	for i := range out {
		a := start + uint64(i)*size
		out[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), prefix.Bits())
	}
	return out, nil
}

// checkNodes checks what the nodes derive from opts: their bridges' names fit the
// kernel's 15 characters, and their networks fit IPv4.
func checkNodes(opts Options) error {
	if opts.Nodes < 1 {
		return fmt.Errorf("--nodes %d: want at least 1", opts.Nodes)
	}
	if opts.WithoutNode && opts.Nodes > 1 {
		return fmt.Errorf("--nodes %d: a cluster without a node has none", opts.Nodes)
	}
	if _, err := nodePodCIDRs(opts.PodCIDR, opts.Nodes+1); err != nil {
		return fmt.Errorf("%d nodes need the nodes' own network and one each: %w", opts.Nodes, err)
	}
	return nil
}

// hostRoute is a network the host routes through an interface.
type hostRoute struct {
	dst netip.Prefix
	dev string
}

// checkPodCIDRsFree refuses a node whose pod network overlaps a network the host
// already routes through another interface than the cluster's own bridges: another
// cluster's bridge, or a LAN. Its pods could not reach that network, nor it them.
func checkPodCIDRsFree(nodes []clusterNode, routes []hostRoute) error {
	ours := map[string]bool{}
	for _, n := range nodes {
		ours[n.bridge] = true
	}
	for _, n := range nodes {
		cidr := netip.MustParsePrefix(n.podCIDR)
		for _, r := range routes {
			if ours[r.dev] || r.dst.Bits() == 0 || !r.dst.Overlaps(cidr) {
				continue
			}
			return fmt.Errorf("pod network %s of node %s overlaps %s, routed through %s: choose another --pod-cidr (%d nodes take %d networks of its size from it)",
				cidr, n.name, r.dst, r.dev, len(nodes), len(nodes))
		}
	}
	return nil
}

// hostRoutes lists the networks of the host's main routing table and their
// interfaces.
func hostRoutes() ([]hostRoute, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing the host's routes: %w", err)
	}
	var out []hostRoute
	for _, r := range routes {
		if r.Dst == nil {
			continue // the default route
		}
		dst, ok := netipx(r.Dst)
		if !ok {
			continue
		}
		dev := strconv.Itoa(r.LinkIndex)
		if link, err := netlink.LinkByIndex(r.LinkIndex); err == nil {
			dev = link.Attrs().Name
		}
		out = append(out, hostRoute{dst: dst, dev: dev})
	}
	return out, nil
}

// netipx converts an IPv4 network to a netip.Prefix.
func netipx(n *net.IPNet) (netip.Prefix, bool) {
	addr, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(addr.Unmap(), bits), true
}

// deleteStaleNodes deletes the Nodes of a larger cluster that ran from the same
// state directory before: their processes are gone, and pods must not wait for
// them.
func deleteStaleNodes(ctx context.Context, c client.Client, opts Options) error {
	list := &corev1.NodeList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range list.Items {
		node := &list.Items[i]
		if !staleNode(node.Name, opts) {
			continue
		}
		if err := c.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting node %s, of a larger cluster before: %w", node.Name, err)
		}
		fmt.Fprintf(opts.Progress, "node %s deleted: the cluster has %d nodes now\n", node.Name, opts.Nodes)
	}
	return nil
}

// staleNode reports whether name is the name clusterNodes gives a node beyond
// opts.Nodes.
func staleNode(name string, opts Options) bool {
	suffix, ok := strings.CutPrefix(name, opts.NodeName+"-")
	if !ok || strings.HasPrefix(suffix, "0") {
		return false
	}
	k, err := strconv.Atoi(suffix)
	return err == nil && k >= 2 && k > opts.Nodes
}
