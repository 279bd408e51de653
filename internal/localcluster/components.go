package localcluster

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"text/template"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// Names of the components: of their binaries in bin/, pid files and logs.
const (
	compEtcd              = "etcd"
	compAPIServer         = "kube-apiserver"
	compControllerManager = "kube-controller-manager"
	compScheduler         = "kube-scheduler"
	compNode              = "tfk8s-node"
	compDNS               = "coredns"
	compS3                = "versitygw"
	compController        = "tfk8s-controller"
	compRegistry          = "registry"
)

// allComponents are every component's name, in start order.
var allComponents = []string{compEtcd, compAPIServer, compControllerManager, compScheduler, compRegistry, compNode, compDNS, compS3, compController}

// stopOrder is the order Down stops the components in, each while what it needs still
// runs: the node first, whose pods (the agent's last upload above all) need S3, DNS
// and the API server until they have stopped; then the controller and the control
// plane that the node's final status writes went to; then DNS, S3 and the registry,
// which serve pods only; etcd last, under the API server.
var stopOrder = []string{compNode, compController, compScheduler, compControllerManager, compAPIServer, compDNS, compS3, compRegistry, compEtcd}

// stopOrderOf is stopOrder with every node of the cluster in the node's place.
func stopOrderOf(opts Options) []string {
	var order []string
	for _, name := range stopOrder {
		if name == compNode {
			order = append(order, nodeComponents(opts)...)
			continue
		}
		order = append(order, name)
	}
	return order
}

// controlPlaneComponents are the components package controlplane starts.
var controlPlaneComponents = []string{compEtcd, compAPIServer, compControllerManager, compScheduler}

// component is one process of the cluster, its binary in bin/ and the endpoints it
// listens on.
type component struct {
	name      string
	endpoints []endpoint
	// binary is the program's name in bin/: name itself but for the nodes after
	// the first, which run tfk8s-node too.
	binary string
}

// components lists the cluster's components in the order Up starts them; Down stops
// them in stopOrder.
func components(opts Options) []component {
	lo := netip.MustParseAddr("127.0.0.1")
	br, _ := bridgeIP(opts.PodCIDR) // checked by withDefaults
	tcp := func(a netip.Addr, port int) endpoint { return endpoint{"tcp", netip.AddrPortFrom(a, uint16(port))} }
	udp := func(a netip.Addr, port int) endpoint { return endpoint{"udp", netip.AddrPortFrom(a, uint16(port))} }
	p := opts.Ports
	cs := []component{
		{compEtcd, []endpoint{tcp(lo, p.Etcd), tcp(lo, p.EtcdPeer)}, compEtcd},
		{compAPIServer, []endpoint{tcp(lo, p.APIServer)}, compAPIServer},
		{compControllerManager, []endpoint{tcp(lo, p.ControllerManager)}, compControllerManager},
		{compScheduler, []endpoint{tcp(lo, p.Scheduler)}, compScheduler},
		{compRegistry, []endpoint{tcp(registryHost(opts), p.Registry)}, compRegistry},
	}
	if opts.UpstreamNode {
		// Each node's kubelet API listens in its own network namespace.
		for _, n := range clusterNodes(opts) {
			cs = append(cs, component{n.component, nil, compNodeInit})
		}
	} else if !opts.WithoutNode {
		// Each node's kubelet API listens on its own bridge's address, all on one port.
		for _, n := range clusterNodes(opts) {
			nbr, _ := bridgeIP(n.podCIDR)
			cs = append(cs, component{n.component, []endpoint{tcp(nbr, p.Kubelet)}, compNode})
		}
	}
	cs = append(cs,
		component{compDNS, []endpoint{udp(br, p.DNS), tcp(br, p.DNS), tcp(lo, p.DNSReady)}, compDNS},
		component{compS3, []endpoint{tcp(br, p.S3)}, compS3},
	)
	if opts.Install == "" { // else the controller runs as pods on the node
		cs = append(cs, component{compController, []endpoint{tcp(lo, p.ControllerMetrics), tcp(lo, p.ControllerHealth)}, compController})
	}
	return cs
}

// componentNamed returns the component called name.
func componentNamed(opts Options, name string) component {
	for _, c := range components(opts) {
		if c.name == name {
			return c
		}
	}
	panic("unknown component " + name)
}

// nodeArgs are the flags of node n's tfk8s-node. Every node's pods resolve names
// through the DNS server on the first node's bridge, which the host reaches from
// every bridge.
func nodeArgs(opts Options, n clusterNode, p paths, pki controlplane.KubeletClientPKI) []string {
	br, _ := bridgeIP(opts.PodCIDR)
	args := []string{
		"--kubeconfig=" + p.kubeconfig,
		"--node-name=" + n.name,
		"--state-dir=" + n.stateDir,
		"--pod-cidr=" + n.podCIDR,
		"--bridge=" + n.bridge,
		"--cluster-dns=" + br.String(),
		"--cluster-domain=" + opts.ClusterDomain,
		"--port=" + strconv.Itoa(opts.Ports.Kubelet),
		"--client-ca-file=" + pki.CACert,
		"--gpus=" + strconv.Itoa(opts.GPUs),
		// Pods see the host's file system: not the cluster's kubeconfig, keys and S3
		// credentials, nor the user's tfk8s settings.
		"--masked-paths=" + strings.Join([]string{p.dir, opts.UserConfigFile}, ","),
		"--allowed-host-paths=" + strings.Join(opts.AllowedHostPaths, ","),
		// Every image is looked for in the cluster's registry first, then in its own.
		"--registry-mirror=*=" + registryURL(opts),
	}
	if opts.Nodes > 1 {
		// Pods reach the other nodes' pods through the host, bridge to bridge.
		args = append(args, "--ip-forward")
	}
	if !n.first {
		// One provisioner binds the cluster's claims; two would race for each.
		args = append(args, "--local-provisioner=false")
	}
	if opts.ImageDir != "" {
		args = append(args, "--image-dir="+opts.ImageDir)
	}
	for _, name := range opts.HostImages {
		args = append(args, "--host-image="+name)
	}
	return args
}

// apiServerArgs are kube-apiserver's extra flags: it reaches the node's kubelet API at
// its InternalIP with a client certificate, since that API listens on the bridge,
// where every pod can reach it.
func apiServerArgs(pki controlplane.KubeletClientPKI) []string {
	return append(pki.APIServerArgs(), "--kubelet-preferred-address-types=InternalIP")
}

// nodeCleanupArgs are the flags of `tfk8s-node --cleanup` for node n.
func nodeCleanupArgs(n clusterNode) []string {
	return []string{
		"--cleanup",
		"--node-name=" + n.name,
		"--state-dir=" + n.stateDir,
		"--pod-cidr=" + n.podCIDR,
		"--bridge=" + n.bridge,
	}
}

// s3Args are versitygw's flags; its root credentials go in its environment, where
// other users cannot read them in ps.
func s3Args(opts Options, p paths) []string {
	br, _ := bridgeIP(opts.PodCIDR)
	return []string{"--port", netip.AddrPortFrom(br, uint16(opts.Ports.S3)).String(), "--quiet", "posix", p.s3Data}
}

// controllerArgs are tfk8s-controller's flags.
func controllerArgs(opts Options, p paths) []string {
	args := []string{
		"--kubeconfig=" + p.kubeconfig,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(opts.Ports.ControllerMetrics),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(opts.Ports.ControllerHealth),
		"--leader-elect=false",
		"--cluster-domain=" + opts.ClusterDomain,
	}
	if n := opts.CompactTFConfigAbove; n != nil {
		args = append(args, "--compact-tf-config-above="+strconv.Itoa(*n))
	}
	return args
}

// corefileTemplate is the cluster DNS configuration: the cluster domain (and reverse
// lookups of pod and service addresses) from the API server, every other name from the
// host's resolvers. It listens on the bridge only, beside whatever DNS the host runs.
var corefileTemplate = template.Must(template.New("Corefile").Parse(`.:{{.Port}} {
    bind {{.Address}}
    errors
    ready 127.0.0.1:{{.ReadyPort}}
    kubernetes {{.Domain}} in-addr.arpa ip6.arpa {
        kubeconfig "{{.Kubeconfig}}" {{.Context}}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . {{.ResolvConf}}
    cache 30
    loop
}
`))

// corefileParams fill corefileTemplate.
type corefileParams struct {
	Address    string
	Port       int
	ReadyPort  int
	Domain     string
	Kubeconfig string
	Context    string
	ResolvConf string
}

// renderCorefile returns the Corefile of the cluster.
func renderCorefile(opts Options, kubeconfig string) ([]byte, error) {
	br, err := bridgeIP(opts.PodCIDR)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	err = corefileTemplate.Execute(&buf, corefileParams{
		Address:    br.String(),
		Port:       opts.Ports.DNS,
		ReadyPort:  opts.Ports.DNSReady,
		Domain:     opts.ClusterDomain,
		Kubeconfig: kubeconfig,
		Context:    ContextName,
		ResolvConf: "/etc/resolv.conf",
	})
	if err != nil {
		return nil, fmt.Errorf("rendering the Corefile: %w", err)
	}
	return buf.Bytes(), nil
}
