package localcluster

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
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
var allComponents = []string{compEtcd, compAPIServer, compControllerManager, compScheduler, compRegistry, compNode, compDNS, compS3, compMetricsServer, compController}

// stopOrder is the order Down stops the components in, each while what it needs still
// runs: the node first, whose pods (the agent's last upload above all) need S3, DNS
// and the API server until they have stopped; then the controller and the control
// plane that the node's final status writes went to, metrics-server before the API
// server that proxies to it; then DNS, S3 and the registry, which serve pods only;
// etcd last, under the API server.
var stopOrder = []string{compNode, compController, compMetricsServer, compScheduler, compControllerManager, compAPIServer, compDNS, compS3, compRegistry, compEtcd}

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
	// binary is the program's name in bin/: name itself but for the nodes, which
	// run tfk8s-nodeinit.
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
		{compAPIServer, []endpoint{tcp(br, p.APIServer)}, compAPIServer}, // where the nodes reach it
		{compControllerManager, []endpoint{tcp(lo, p.ControllerManager)}, compControllerManager},
		{compScheduler, []endpoint{tcp(lo, p.Scheduler)}, compScheduler},
		{compRegistry, []endpoint{tcp(registryHost(opts), p.Registry)}, compRegistry},
	}
	if !opts.WithoutNode {
		// Each node's kubelet API listens in its own network namespace.
		for _, n := range clusterNodes(opts) {
			cs = append(cs, component{n.component, nil, compNodeInit})
		}
	}
	cs = append(cs,
		component{compDNS, []endpoint{udp(br, p.DNS), tcp(br, p.DNS), tcp(lo, p.DNSReady)}, compDNS},
		component{compS3, []endpoint{tcp(br, p.S3)}, compS3},
		component{compMetricsServer, []endpoint{tcp(br, p.MetricsServer)}, compMetricsServer},
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

// apiServerArgs are kube-apiserver's extra flags: it reaches each node's kubelet API
// at the node's InternalIP, with a client certificate.
func apiServerArgs(pki controlplane.KubeletClientPKI) []string {
	return append(pki.APIServerArgs(), "--kubelet-preferred-address-types=InternalIP")
}

// s3Args are versitygw's flags; its root credentials go in its environment, where
// other users cannot read them in ps. Its IAM (--iam-dir) makes the accounts of
// notebooks' keys, each confined to its notebook's prefix.
func s3Args(opts Options, p paths) []string {
	br, _ := bridgeIP(opts.PodCIDR)
	return []string{"--port", netip.AddrPortFrom(br, uint16(opts.Ports.S3)).String(), "--quiet", "--iam-dir", p.s3IAM, "posix", p.s3Data}
}

// gangScheduler is the gang scheduler of local mode's controller for the jobs that name
// none: its control plane serves Kubernetes' own (PodGroup and its feature gates,
// GenericWorkload), so minAvailable means what it says there.
const gangScheduler = "native"

// controllerArgs are tfk8s-controller's flags.
func controllerArgs(opts Options, p paths) []string {
	args := []string{
		"--kubeconfig=" + p.kubeconfig,
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(opts.Ports.ControllerMetrics),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(opts.Ports.ControllerHealth),
		"--leader-elect=false",
		"--cluster-domain=" + opts.ClusterDomain,
		"--gang-scheduler=" + gangScheduler,
		"--kubeflow", // local mode serves tfjobs.kubeflow.org (install.go)
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
