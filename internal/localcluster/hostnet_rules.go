package localcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// The host's side of an upstream cluster's network: the pods and the nodes reach what
// the host reaches, masqueraded behind the host's address on the way out.
//
// net.ipv4.ip_forward stays as it is. Forwarding is turned on per interface instead:
// on the cluster's bridge, where the pods' traffic comes in, and on each uplink (an
// interface the host routes through), where the replies come in, since the kernel
// forwards by the flag of the interface a packet arrives on. A filter in the
// cluster's table lets nothing but those replies in from an uplink whose forwarding
// the cluster turned on. The previous values are recorded in the state directory and
// written back by down. The uplinks are those up finds: one made later (a VPN) is
// taken by the next up.
//
// Of the host's addresses, the nodes and pods reach the bridge's only; which of its
// ports a pod reaches there each node decides (localnode's firewall). Nor do they
// reach link-local addresses beyond the host: 169.254.169.254 serves a cloud VM's
// credentials to whoever asks from it. Options.ExposedToPods opens chosen addresses of
// either kind again, a dataset server on the host's LAN address for one.

// linkLocal is IPv4's link-local network, where clouds serve a VM's metadata and
// credentials.
var linkLocal = netip.MustParsePrefix("169.254.0.0/16")

// uplinksSet is the set, in each cluster's table, of the uplinks whose forwarding the
// cluster turned on: read by the other clusters of the host, so that one going down
// leaves on what another still needs.
const uplinksSet = "uplinks"

// hostNetTable is the name of the nftables table of the cluster in dir.
func hostNetTable(dir string) string { return "tfk8s-" + shortHash(dir) }

// hostNet is the host's side of an upstream cluster's network.
type hostNet struct {
	table  string
	bridge string
	// bridgeAddr is the host's address on the bridge: the only one of the host's
	// addresses the nodes and pods may reach.
	bridgeAddr netip.Addr
	// sources are the networks masqueraded: the nodes' and every node's pods'.
	sources []netip.Prefix
	// uplinks are the interfaces whose forwarding the cluster turned on, but the
	// bridge: only replies come in through them.
	uplinks []string
	// exposed are the networks the nodes and pods reach though they are the host's
	// or link-local: Options.ExposedToPods.
	exposed []netip.Prefix
}

// hostNetOf is the host's side of the network of the cluster opts describes, with
// the forwarding flags in record turned on.
func hostNetOf(opts Options, record forwardingRecord) hostNet {
	network, pods := upstreamNetworks(opts)
	br, _ := bridgeIP(opts.PodCIDR) // checked by withDefaults
	var uplinks []string
	for _, iface := range slices.Sorted(maps.Keys(record)) {
		if iface != opts.Bridge {
			uplinks = append(uplinks, iface)
		}
	}
	return hostNet{
		table:      hostNetTable(opts.Dir),
		bridge:     opts.Bridge,
		bridgeAddr: br,
		sources:    append([]netip.Prefix{network}, pods...),
		uplinks:    uplinks,
		exposed:    opts.ExposedToPods,
	}
}

// renderHostNet is the nft script that replaces the cluster's table with h, and the
// version of its rules, which the table carries as its uplinks set's comment so that
// an up that would change nothing leaves the table alone.
func renderHostNet(h hostNet) (script, version string) {
	sum := sha256.Sum256([]byte(renderHostNetVersion(h, "")))
	version = "rules " + hex.EncodeToString(sum[:])[:12]
	return renderHostNetVersion(h, version), version
}

// renderHostNetVersion renders h with version as its uplinks set's comment.
func renderHostNetVersion(h hostNet, version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "add table ip %[1]s\ndelete table ip %[1]s\ntable ip %[1]s {\n", h.table)
	fmt.Fprintf(&b, "\tset %s {\n\t\ttype ifname\n", uplinksSet)
	if version != "" {
		fmt.Fprintf(&b, "\t\tcomment %q\n", version)
	}
	if len(h.uplinks) > 0 {
		fmt.Fprintf(&b, "\t\telements = { %s }\n", quoteAll(h.uplinks))
	}
	fmt.Fprintf(&b, "\t}\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
	fmt.Fprintf(&b, "\t\tip saddr { %s } oifname != %q masquerade\n\t}\n", joinPrefixes(h.sources), h.bridge)
	fmt.Fprintf(&b, "\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname @%[1]s ct state established,related accept\n\t\tiifname @%[1]s counter drop\n", uplinksSet)
	writeExposed(&b, h)
	fmt.Fprintf(&b, "\t\tiifname %q ip daddr %s counter drop\n\t}\n", h.bridge, linkLocal)
	fmt.Fprintf(&b, "\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname %q ct state established,related accept\n", h.bridge)
	writeExposed(&b, h)
	fmt.Fprintf(&b, "\t\tiifname %q ip daddr != %s fib daddr type local counter drop\n\t}\n}\n", h.bridge, h.bridgeAddr)
	return b.String()
}

// writeExposed writes the rule that lets the nodes and pods reach h.exposed, if any.
func writeExposed(b *strings.Builder, h hostNet) {
	if len(h.exposed) > 0 {
		fmt.Fprintf(b, "\t\tiifname %q ip daddr { %s } accept\n", h.bridge, joinPrefixes(h.exposed))
	}
}

// quoteAll is names quoted and separated by commas.
func quoteAll(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}

// joinPrefixes is prefixes separated by commas.
func joinPrefixes(prefixes []netip.Prefix) string {
	s := make([]string, len(prefixes))
	for i, p := range prefixes {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// forwardingRecord holds, by interface, the value net.ipv4.conf.<interface>.forwarding
// had before the cluster turned it on.
type forwardingRecord map[string]string

// planForwarding decides which of the interfaces in want up turns forwarding on for,
// given their current values (absent: no such interface), what the cluster turned on
// before (record) and what other clusters hold on (claimed). An interface already on
// is left as it is, unless another cluster turned it on: this one then holds it on
// too, as if it had been off, so that it stays on until the last of them is down. It
// returns the interfaces to turn on and the record with them.
func planForwarding(want []string, current map[string]string, record forwardingRecord, claimed map[string]bool) ([]string, forwardingRecord) {
	next := maps.Clone(record)
	if next == nil {
		next = forwardingRecord{}
	}
	var turnOn []string
	for _, iface := range want {
		cur, exists := current[iface]
		_, held := record[iface]
		switch {
		case !exists:
		case held:
			if cur != "1" { // set back by someone, or the interface made anew
				turnOn = append(turnOn, iface)
			}
		case cur == "1":
			if claimed[iface] {
				next[iface] = "0"
			}
		default:
			next[iface] = cur
			turnOn = append(turnOn, iface)
		}
	}
	return turnOn, next
}

// planRestore decides what down writes back: each recorded interface's previous
// value, where the interface still exists, differs from it and no other cluster
// holds it on.
func planRestore(record forwardingRecord, current map[string]string, claimed map[string]bool) map[string]string {
	restore := map[string]string{}
	for iface, prev := range record {
		if cur, exists := current[iface]; exists && cur != prev && !claimed[iface] {
			restore[iface] = prev
		}
	}
	return restore
}
