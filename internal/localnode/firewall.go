package localnode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tfk8s/tfk8s/internal/nft"
)

// HostPorts are the ports of the host's services on HostAddress that pods may reach.
type HostPorts struct {
	// APIServer is kube-apiserver's (TCP): the kubernetes Service's endpoint.
	APIServer int `json:"apiServer"`
	// DNS is CoreDNS's (UDP and TCP): the kube-dns Service's endpoint, and the name
	// server of pods with dnsPolicy Default.
	DNS int `json:"dns"`
	// S3 is the S3 server's (TCP), where jobs read data and write checkpoints.
	S3 int `json:"s3"`
}

// firewallTable is the node's own nftables table in its network namespace, beside
// kube-proxy's, which it leaves alone.
const firewallTable = "tfk8s-node"

// firewall is what the node lets its pods send to the host address.
type firewall struct {
	host  netip.Addr
	ports HostPorts
	// registry is the registry's port when it listens on the host address, else 0.
	registry int
	// systemCgroup is the node's system cgroup as nft names it (relative to
	// /sys/fs/cgroup) and level its depth in the cgroup v2 hierarchy. Empty where the
	// host has no cgroup v2 hierarchy: hostNetwork pods then go unfiltered.
	systemCgroup string
	level        int
}

// firewallOf is the firewall of node c; cgroup2Dir is where the cgroup v2 hierarchy
// is mounted relative to /sys/fs/cgroup ("." on a v2 host, "unified" on a hybrid one),
// "" if nowhere.
func firewallOf(c Config, cgroup2Dir string) firewall {
	f := firewall{host: c.HostAddress.Addr(), ports: c.HostPorts, registry: registryPortOnHost(c)}
	if cgroup2Dir != "" {
		system := path.Join(c.CgroupRoot, systemCgroup)
		f.systemCgroup = path.Join(cgroup2Dir, system)
		f.level = strings.Count(path.Clean(system), "/")
	}
	return f
}

// renderFirewall is the nft script that replaces the node's table with f. Pods'
// traffic is forwarded by the node from its CNI bridge; hostNetwork pods' is the
// node's own output, told from containerd's and the kubelet's by the cgroup of the
// socket: whatever is not in the node's system cgroup is a pod's. Replies of
// connections the host opened pass.
func renderFirewall(f firewall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "add table ip %[1]s\ndelete table ip %[1]s\ntable ip %[1]s {\n", firewallTable)
	fmt.Fprintf(&b, "\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname %q ip daddr %s jump pods-to-host\n\t}\n", cniBridge, f.host)
	if f.systemCgroup != "" {
		fmt.Fprintf(&b, "\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n")
		fmt.Fprintf(&b, "\t\tip daddr %s socket cgroupv2 level %d != %q jump pods-to-host\n\t}\n", f.host, f.level, f.systemCgroup)
	}
	fmt.Fprintf(&b, "\tchain pods-to-host {\n\t\tct state established,related accept\n")
	if f.registry != 0 {
		fmt.Fprintf(&b, "\t\ttcp dport %d counter drop\n", f.registry)
	}
	fmt.Fprintf(&b, "\t\ttcp dport %s accept\n", portSet(f.ports.APIServer, f.ports.DNS, f.ports.S3))
	fmt.Fprintf(&b, "\t\tudp dport %d accept\n", f.ports.DNS)
	fmt.Fprintf(&b, "\t\tcounter drop\n\t}\n}\n")
	return b.String()
}

// portSet is ports as an nft anonymous set, sorted, each once.
func portSet(ports ...int) string {
	slices.Sort(ports)
	var s []string
	for _, p := range slices.Compact(ports) {
		s = append(s, strconv.Itoa(p))
	}
	return "{ " + strings.Join(s, ", ") + " }"
}

// applyFirewall puts the node's firewall in place, in the calling process's network
// namespace (the node's). Where the kernel or nft cannot match sockets by cgroup, it
// does without the hostNetwork pods' rule and says so, since Pod Security's baseline
// level refuses hostNetwork pods outside the system namespaces anyway.
func applyFirewall(ctx context.Context, c Config) error {
	f := firewallOf(c, cgroup2Dir(cgroupMount))
	err := nft.Apply(ctx, renderFirewall(f))
	if err != nil && f.systemCgroup != "" {
		fmt.Fprintf(os.Stderr, "node %s: hostNetwork pods reach every port of the host address: %v\n", c.Name, err)
		f.systemCgroup = ""
		err = nft.Apply(ctx, renderFirewall(f))
	}
	if err != nil {
		return fmt.Errorf("filtering what the node's pods send to the host: %w", err)
	}
	return nil
}

// cgroup2Dir is where, under mount, the cgroup v2 hierarchy is: "." if mount is
// one, "unified" on a hybrid host, "" if neither.
func cgroup2Dir(mount string) string {
	for _, dir := range []string{".", "unified"} {
		var st unix.Statfs_t
		if unix.Statfs(filepath.Join(mount, dir), &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir
		}
	}
	return ""
}

// registryPortOnHost is the port of c's registry mirror if the mirror listens on the
// host address, else 0.
func registryPortOnHost(c Config) int {
	u, err := url.Parse(c.RegistryMirror)
	if err != nil {
		return 0
	}
	if addr, err := netip.ParseAddr(u.Hostname()); err != nil || addr != c.HostAddress.Addr() {
		return 0
	}
	if port, err := strconv.Atoi(u.Port()); err == nil {
		return port
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// checkHostPorts refuses host ports that are not TCP ports, and a registry on one of
// them, which the pods would then reach.
func (c Config) checkHostPorts() error {
	var errs []error
	ports := []struct {
		name string
		port int
	}{{"apiServer", c.HostPorts.APIServer}, {"dns", c.HostPorts.DNS}, {"s3", c.HostPorts.S3}}
	for _, p := range ports {
		if p.port <= 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("hostPorts.%s %d: want a port", p.name, p.port))
		}
		if registry := registryPortOnHost(c); p.port == registry {
			errs = append(errs, fmt.Errorf("hostPorts.%s %d is the registry's: pods would reach it", p.name, p.port))
		}
	}
	return errors.Join(errs...)
}
