package node

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits the kubelet applies to a pod's resolv.conf.
const (
	maxNameservers = 3
	maxSearches    = 32
	clusterNdots   = "ndots:5"
)

// podHostnames returns the pod's hostname (spec.hostname, else its name cut to 63
// characters) and, when it names a subdomain, its fully qualified name
// <hostname>.<subdomain>.<namespace>.svc.<domain>; else fqdn is "".
func podHostnames(pod *corev1.Pod, clusterDomain string) (hostname, fqdn string) {
	hostname = pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
		if len(hostname) > 63 {
			hostname = strings.TrimRight(hostname[:63], "-.")
		}
	}
	if pod.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", hostname, pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, fqdn
}

// utsHostname is the hostname a pod's containers see: its FQDN with
// setHostnameAsFQDN, else its short hostname.
func utsHostname(pod *corev1.Pod, clusterDomain string) string {
	hostname, fqdn := podHostnames(pod, clusterDomain)
	if fqdn != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		return fqdn
	}
	return hostname
}

// renderHosts returns a pod's /etc/hosts: the kubelet's managed file naming the pod at
// its IP, or, for a host-network pod, the host's file; then the pod's hostAliases.
func renderHosts(pod *corev1.Pod, podIP, clusterDomain string, hostFile []byte) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.Write(hostFile)
		if len(hostFile) > 0 && hostFile[len(hostFile)-1] != '\n' {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		hostname, fqdn := podHostnames(pod, clusterDomain)
		if fqdn != "" {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", podIP, fqdn, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// resolvConf is the content of a resolv.conf that matters to pods.
type resolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// parseResolvConf reads nameserver, search (or domain) and options lines.
func parseResolvConf(data []byte) resolvConf {
	var rc resolvConf
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			rc.Nameservers = append(rc.Nameservers, fields[1])
		case "search", "domain":
			rc.Searches = fields[1:]
		case "options":
			rc.Options = append(rc.Options, fields[1:]...)
		}
	}
	return rc
}

// podResolvConf returns what a pod's resolv.conf holds under its dnsPolicy and
// dnsConfig, following the kubelet: ClusterFirst names the cluster DNS and searches the
// namespace's, the cluster's and then the host's domains with ndots:5; a host-network
// pod (unless ClusterFirstWithHostNet), or any pod when no cluster DNS is configured,
// gets the host's configuration; None takes dnsConfig alone.
func podResolvConf(pod *corev1.Pod, clusterDNS []string, clusterDomain string, host resolvConf) resolvConf {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	switch {
	case policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork:
		policy = corev1.DNSDefault
	case policy == corev1.DNSClusterFirstWithHostNet:
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && len(clusterDNS) == 0 {
		policy = corev1.DNSDefault
	}
	var rc resolvConf
	switch policy {
	case corev1.DNSClusterFirst:
		rc.Nameservers = slices.Clone(clusterDNS)
		rc.Searches = []string{
			pod.Namespace + ".svc." + clusterDomain,
			"svc." + clusterDomain,
			clusterDomain,
		}
		rc.Searches = appendUnique(rc.Searches, host.Searches...)
		rc.Options = []string{clusterNdots}
	case corev1.DNSDefault:
		rc = resolvConf{
			Nameservers: slices.Clone(host.Nameservers),
			Searches:    slices.Clone(host.Searches),
			Options:     slices.Clone(host.Options),
		}
	}
	if cfg := pod.Spec.DNSConfig; cfg != nil {
		rc.Nameservers = appendUnique(rc.Nameservers, cfg.Nameservers...)
		rc.Searches = appendUnique(rc.Searches, cfg.Searches...)
		for _, o := range cfg.Options {
			rc.Options = setOption(rc.Options, o)
		}
	}
	if len(rc.Nameservers) > maxNameservers {
		rc.Nameservers = rc.Nameservers[:maxNameservers]
	}
	if len(rc.Searches) > maxSearches {
		rc.Searches = rc.Searches[:maxSearches]
	}
	return rc
}

// render writes rc in resolv.conf syntax.
func (rc resolvConf) render() []byte {
	var b bytes.Buffer
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	for _, ns := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}

// setOption replaces the option of the same name in opts, or appends it.
func setOption(opts []string, o corev1.PodDNSConfigOption) []string {
	s := o.Name
	if o.Value != nil {
		s += ":" + *o.Value
	}
	for i, existing := range opts {
		name, _, _ := strings.Cut(existing, ":")
		if name == o.Name {
			opts[i] = s
			return opts
		}
	}
	return append(opts, s)
}

// appendUnique appends the items not already in list.
func appendUnique(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
