package localnode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// nodeInterface is the name of the node's end of its veth, inside its namespace.
const nodeInterface = "eth0"

// HostVeth is the name of the host's end of a node's veth: "tfk" and a hash of the
// node's state directory, so that two clusters' nodes of the same name do not clash;
// its peer adds "p", within the kernel's 15 characters.
func HostVeth(c Config) string {
	sum := sha256.Sum256([]byte(c.StateDir))
	return "tfk" + hex.EncodeToString(sum[:])[:10]
}

// connectNode joins the network namespace of process pid, the inner half, to the host
// bridge: a veth whose host end is on the bridge and whose other end, renamed eth0,
// takes the node's address; a default route through the host, routes to the other
// nodes' pods through them, and on the host a route to this node's pods.
func connectNode(c Config, pid int) error {
	bridge, err := netlink.LinkByName(c.Bridge)
	if err != nil {
		return fmt.Errorf("looking up the host bridge %s: %w", c.Bridge, err)
	}
	peerTmp := HostVeth(c) + "p"
	_ = deleteLink(HostVeth(c)) // left by a node that crashed
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: HostVeth(c), MasterIndex: bridge.Attrs().Index}, PeerName: peerTmp}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth %s: %w", veth.Name, err)
	}
	peer, err := netlink.LinkByName(peerTmp)
	if err != nil {
		return fmt.Errorf("looking up veth %s: %w", peerTmp, err)
	}
	if err := netlink.LinkSetNsPid(peer, pid); err != nil {
		return fmt.Errorf("moving veth %s into the node's network namespace: %w", peerTmp, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("bringing veth %s up: %w", veth.Name, err)
	}
	if err := configureInside(c, pid, peerTmp); err != nil {
		return err
	}
	route := &netlink.Route{Dst: ipNet(c.PodCIDR.Masked()), Gw: c.Address.AsSlice()}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("routing %s to node %s on the host: %w", c.PodCIDR, c.Name, err)
	}
	return nil
}

// configureInside sets up the node's side of the network from the host, through a
// netlink handle in the node's namespace.
func configureInside(c Config, pid int, peerName string) error {
	ns, err := netns.GetFromPid(pid)
	if err != nil {
		return fmt.Errorf("opening the node's network namespace: %w", err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("reaching the node's network namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("looking up the node's loopback: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing the node's loopback up: %w", err)
	}
	link, err := h.LinkByName(peerName)
	if err != nil {
		return fmt.Errorf("looking up veth %s in the node: %w", peerName, err)
	}
	if err := h.LinkSetName(link, nodeInterface); err != nil {
		return fmt.Errorf("renaming veth %s to %s: %w", peerName, nodeInterface, err)
	}
	addr := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(c.Address, c.HostAddress.Bits()))}
	if err := h.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("addressing the node's %s: %w", nodeInterface, err)
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing the node's %s up: %w", nodeInterface, err)
	}
	routes := []*netlink.Route{{LinkIndex: link.Attrs().Index, Gw: c.HostAddress.Addr().AsSlice()}}
	for _, p := range c.Peers {
		routes = append(routes, &netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipNet(p.PodCIDR.Masked()), Gw: p.Address.AsSlice()})
	}
	for _, r := range routes {
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("adding route %v in the node: %w", r, err)
		}
	}
	return nil
}

// disconnectNode removes what connectNode left on the host: the route to the node's
// pods and the host end of its veth (gone already when the namespace went).
func disconnectNode(c Config) error {
	route := &netlink.Route{Dst: ipNet(c.PodCIDR.Masked()), Gw: c.Address.AsSlice()}
	err := netlink.RouteDel(route)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("removing the host's route to node %s's pods: %w", c.Name, err)
	}
	return deleteLink(HostVeth(c))
}

// deleteLink deletes the named link if it exists.
func deleteLink(name string) error {
	link, err := netlink.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up %s: %w", name, err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// setForwarding turns on IPv4 forwarding in the calling process's network namespace
// (the node's own): its pods' traffic passes through it.
func setForwarding() error {
	path := filepath.Join("/proc/sys/net/ipv4", "ip_forward")
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		return fmt.Errorf("turning on forwarding in the node: %w", err)
	}
	return nil
}

// ipNet converts a prefix to the net.IPNet netlink takes.
func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
