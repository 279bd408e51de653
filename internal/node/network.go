package node

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// netnsDir is where named network namespaces live, as `ip netns` expects.
const netnsDir = "/var/run/netns"

// network is the node's pod network: a bridge holding the gateway address, and per pod
// a network namespace joined to the bridge by a veth pair.
type network struct {
	bridge string
	cidr   podCIDR
	// forward turns on IPv4 forwarding of packets that arrive on the bridge.
	forward bool
}

// netnsName is the name of a pod's network namespace under /var/run/netns.
func netnsName(podUID string) string { return "tfk8s-" + shortUID(podUID, 12) }

// netnsPath is the bind mount that keeps a pod's network namespace alive.
func netnsPath(podUID string) string { return filepath.Join(netnsDir, netnsName(podUID)) }

// vethName is the host end of a pod's veth pair: at most 15 characters.
func vethName(podUID string) string { return "veth" + shortUID(podUID, 11) }

// shortUID is the first n hexadecimal digits of a UID.
func shortUID(uid string, n int) string {
	s := strings.ReplaceAll(uid, "-", "")
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// setUp creates the bridge if needed, gives it the gateway address and brings it up.
func (n network) setUp() error {
	link, err := netlink.LinkByName(n.bridge)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if !errors.As(err, &notFound) {
			return fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: n.bridge}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge %s: %w", n.bridge, err)
		}
		if link, err = netlink.LinkByName(n.bridge); err != nil {
			return fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
		}
	}
	if _, ok := link.(*netlink.Bridge); !ok {
		return fmt.Errorf("%s exists and is a %s, not a bridge", n.bridge, link.Type())
	}
	// A bridge without an address of its own takes the lowest of its ports', so deleting
	// a pod's veth could change the gateway's MAC under the other pods' ARP caches and
	// cut them off from the node (S3, DNS) for half a minute. Pin one, derived from the
	// name so a restarted node keeps it.
	if err := netlink.LinkSetHardwareAddr(link, bridgeMAC(n.bridge)); err != nil {
		return fmt.Errorf("setting the address of bridge %s: %w", n.bridge, err)
	}
	addr := &netlink.Addr{IPNet: ipNet(n.cidr.gateway(), n.cidr.prefix.Bits())}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("addressing bridge %s: %w", n.bridge, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing bridge %s up: %w", n.bridge, err)
	}
	if !n.forward {
		return nil // the host's default, as for any new interface
	}
	return enableForwarding(n.bridge)
}

// enableForwarding turns on IPv4 forwarding of the packets that arrive on iface. The
// kernel decides to forward by the interface a packet arrives on, so pods of one
// bridge reach those of another bridge of the host (whose route is the other bridge's
// own) when their bridge forwards, while net.ipv4.ip_forward and every other
// interface stay as they are.
func enableForwarding(iface string) error {
	path := filepath.Join("/proc/sys/net/ipv4/conf", iface, "forwarding")
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("setting IPv4 forwarding of bridge %s: %w", iface, err)
	}
	return nil
}

// tearDown deletes every veth attached to the bridge, then the bridge.
func (n network) tearDown() error {
	link, err := netlink.LinkByName(n.bridge)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return nil
		}
		return fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
	}
	links, err := netlink.LinkList()
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	var errs []error
	for _, l := range links {
		if l.Attrs().MasterIndex == link.Attrs().Index {
			if err := netlink.LinkDel(l); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s: %w", l.Attrs().Name, err))
			}
		}
	}
	if err := netlink.LinkDel(link); err != nil {
		errs = append(errs, fmt.Errorf("deleting bridge %s: %w", n.bridge, err))
	}
	return errors.Join(errs...)
}

// addPod creates a pod's network namespace with lo up and eth0 at ip, its default
// route through the bridge, and the veth's host end in the bridge. It returns the
// namespace's path for the OCI spec.
func (n network) addPod(podUID string, ip netip.Addr) (string, error) {
	if err := n.removePod(podUID); err != nil {
		return "", err
	}
	ns, err := newNamedNetns(netnsName(podUID))
	if err != nil {
		return "", err
	}
	defer ns.Close()
	bridge, err := netlink.LinkByName(n.bridge)
	if err != nil {
		return "", fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: vethName(podUID), MasterIndex: bridge.Attrs().Index, MTU: bridge.Attrs().MTU},
		PeerName:      "eth0",
		PeerNamespace: netlink.NsFd(int(ns)),
		PeerMTU:       uint32(bridge.Attrs().MTU),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return "", fmt.Errorf("creating veth %s: %w", veth.Name, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return "", fmt.Errorf("bringing veth %s up: %w", veth.Name, err)
	}
	if err := configurePodInterfaces(ns, ip, n.cidr); err != nil {
		return "", err
	}
	return netnsPath(podUID), nil
}

// configurePodInterfaces sets up lo and eth0 inside a pod's namespace.
func configurePodInterfaces(ns netns.NsHandle, ip netip.Addr, cidr podCIDR) error {
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("opening the pod network namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("looking up lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("looking up eth0: %w", err)
	}
	if err := h.AddrAdd(eth0, &netlink.Addr{IPNet: ipNet(ip, cidr.prefix.Bits())}); err != nil {
		return fmt.Errorf("addressing eth0: %w", err)
	}
	if err := h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("bringing eth0 up: %w", err)
	}
	gw := cidr.gateway().AsSlice()
	if err := h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: net.IP(gw)}); err != nil {
		return fmt.Errorf("adding the default route: %w", err)
	}
	return nil
}

// removePod deletes a pod's veth and network namespace; either already gone is fine.
func (n network) removePod(podUID string) error {
	var errs []error
	if link, err := netlink.LinkByName(vethName(podUID)); err == nil {
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("deleting veth %s: %w", vethName(podUID), err))
		}
	}
	if err := unmount(netnsPath(podUID)); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(netnsPath(podUID)); err != nil && !os.IsNotExist(err) {
		errs = append(errs, fmt.Errorf("removing network namespace %s: %w", netnsName(podUID), err))
	}
	return errors.Join(errs...)
}

// newNamedNetns creates a network namespace kept alive by a bind mount under
// /var/run/netns, like `ip netns add`. Creating one moves the calling thread into it,
// so this runs on a locked thread that is moved back; a thread that cannot be moved back
// stays locked, and Go retires it when the goroutine ends.
func newNamedNetns(name string) (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return netns.None(), fmt.Errorf("opening the host network namespace: %w", err)
	}
	defer orig.Close()
	ns, err := netns.NewNamed(name)
	if serr := netns.Set(orig); serr != nil {
		if err == nil {
			ns.Close()
		}
		return netns.None(), fmt.Errorf("returning to the host network namespace: %w", serr)
	}
	runtime.UnlockOSThread()
	if err != nil {
		return netns.None(), fmt.Errorf("creating network namespace %s: %w", name, err)
	}
	return ns, nil
}

// ipNet is addr with a prefix length, as netlink wants it.
func ipNet(addr netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(bits, 32)}
}

// bridgeMAC is a locally administered unicast MAC address derived from a bridge's name.
func bridgeMAC(name string) net.HardwareAddr {
	sum := sha256.Sum256([]byte(name))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = (mac[0] | 0x02) &^ 0x01
	return mac
}
