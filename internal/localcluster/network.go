package localcluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// ensureBridge creates the host bridge the nodes join, with the host's address, the
// first of cidr. It reports whether it had to create or address it.
func ensureBridge(name, cidr string) (bool, error) {
	if bridgeServes(name, cidr) == nil {
		return false, nil
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false, fmt.Errorf("parsing pod CIDR %q: %w", cidr, err)
	}
	br, err := bridgeIP(cidr)
	if err != nil {
		return false, err
	}
	link, err := netlink.LinkByName(name)
	if err != nil {
		if !errors.As(err, &netlink.LinkNotFoundError{}) {
			return false, fmt.Errorf("looking up bridge %s: %w", name, err)
		}
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
			return false, fmt.Errorf("creating bridge %s: %w", name, err)
		}
		if link, err = netlink.LinkByName(name); err != nil {
			return false, fmt.Errorf("looking up bridge %s: %w", name, err)
		}
	}
	if _, ok := link.(*netlink.Bridge); !ok {
		return false, fmt.Errorf("%s exists and is a %s, not a bridge", name, link.Type())
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: br.AsSlice(), Mask: net.CIDRMask(prefix.Bits(), 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return false, fmt.Errorf("addressing bridge %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return false, fmt.Errorf("bringing bridge %s up: %w", name, err)
	}
	return true, nil
}

// bridgeServes checks that the bridge is up with the first address of cidr.
func bridgeServes(name, cidr string) error {
	br, err := bridgeIP(cidr)
	if err != nil {
		return err
	}
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("looking up bridge %s: %w", name, err)
	}
	if iface.Flags&net.FlagUp == 0 {
		return fmt.Errorf("bridge %s is down", name)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return fmt.Errorf("reading the addresses of bridge %s: %w", name, err)
	}
	for _, a := range addrs {
		if ipNet, ok := a.(*net.IPNet); ok && ipNet.IP.Equal(br.AsSlice()) {
			return nil
		}
	}
	return fmt.Errorf("bridge %s does not have address %s", name, br)
}

// deleteBridge deletes the bridge if it exists.
func deleteBridge(name string) error {
	link, err := netlink.LinkByName(name)
	if errors.As(err, &netlink.LinkNotFoundError{}) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking up bridge %s: %w", name, err)
	}
	if _, ok := link.(*netlink.Bridge); !ok {
		return fmt.Errorf("%s is a %s, not a bridge: left alone", name, link.Type())
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("deleting bridge %s: %w", name, err)
	}
	return nil
}

// linkExists reports whether a network interface is called name.
func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}
