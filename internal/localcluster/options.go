// Package localcluster runs tfk8s's local mode: a one-machine Kubernetes cluster made
// of the upstream control plane (etcd, kube-apiserver with gang scheduling,
// kube-controller-manager, kube-scheduler), an OCI registry (CNCF Distribution) that
// the nodes mirror every registry to, the nodes (the upstream kubelet, containerd and
// kube-proxy, each node in namespaces of its own under tfk8s-nodeinit: package
// localnode; Options.Nodes of them), CoreDNS, an S3 server (versitygw) and
// tfk8s-controller, all from bin/. Each runs as a detached process with its pid file
// and log in the state directory, so that the cluster outlives `tfk8s local up` and
// `tfk8s local down`, run later, can stop it.
//
// The state directory (default ~/.tfk8s/local) holds:
//
//	kubeconfig      the cluster administrator's kubeconfig, context tfk8s-local
//	s3.yaml         the S3 settings, in the format of ~/.tfk8s/config
//	cluster.yaml    the network settings the cluster was created with
//	cluster/        certificates, etcd's data, the Corefile, registry.yml, and
//	                <component>.pid and .log
//	node/           the first node's state (package localnode): containerd's root,
//	                the kubelet's directory, container logs, volumes
//	node-2/, ...    the state of the other nodes of a cluster of several (--nodes)
//	s3/             versitygw's buckets
//	s3-iam/         versitygw's accounts: the notebooks' keys
//	registry/       the registry's storage: the images pushed by up and load
package localcluster

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Defaults of Options.
const (
	DefaultPodCIDR       = "10.244.0.0/24"
	DefaultBridge        = "tfk8s0"
	DefaultClusterDomain = "cluster.local"
	DefaultNodeName      = "tfk8s-local"
	// Bucket is the bucket created in the cluster's S3 server.
	Bucket = "tfk8s"
	// ContextName is the kubeconfig context of the local cluster.
	ContextName = "tfk8s-local"
)

// Ports are the TCP (and, for DNS, UDP) ports of the components. etcd, the controller
// manager, the scheduler and the controller listen on 127.0.0.1; kube-apiserver, the
// registry, DNS and S3 on the bridge's address, where the nodes reach them; each
// node's kubelet API on the node's own address.
type Ports struct {
	APIServer         int `json:"apiServer"`
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kubelet           int `json:"kubelet"`
	// DNS must stay 53 for pods: resolv.conf cannot name another port.
	DNS int `json:"dns"`
	// DNSReady serves CoreDNS's readiness endpoint.
	DNSReady          int `json:"dnsReady"`
	S3                int `json:"s3"`
	ControllerMetrics int `json:"controllerMetrics"`
	ControllerHealth  int `json:"controllerHealth"`
	// Registry is the image registry's: the nodes pull through it, and the user
	// pushes to it.
	Registry int `json:"registry"`
	// MetricsServer serves the metrics API, on the bridge's address, where
	// kube-apiserver's aggregation layer reaches it.
	MetricsServer int `json:"metricsServer"`
}

// DefaultPorts are the ports of a local cluster whose Options leave them unset.
var DefaultPorts = Ports{
	APIServer:         6443,
	Etcd:              2379,
	EtcdPeer:          2380,
	ControllerManager: 10257,
	Scheduler:         10259,
	Kubelet:           10250,
	DNS:               53,
	DNSReady:          10282,
	S3:                7070,
	ControllerMetrics: 10280,
	ControllerHealth:  10281,
	Registry:          5000,
	MetricsServer:     10283,
}

// Options configure a local cluster. The zero value is the default cluster.
type Options struct {
	// Dir is the state directory. Default: ~/.tfk8s/local.
	Dir string
	// BinDir holds the binaries. Default: $TFK8S_BIN, else the directory of the
	// running executable if it holds etcd (the tfk8s command in bin/), else bin/ of
	// the tfk8s source tree around the working directory.
	BinDir string
	// UserConfigFile is written with the cluster's S3 settings if it does not exist
	// or names the cluster's S3 endpoint (see decideUserConfig). Default:
	// ~/.tfk8s/config.
	UserConfigFile string
	// NodeName is the name of the Node. Default: DefaultNodeName.
	NodeName string
	// PodCIDR's network is the nodes' own, on the bridge: the host takes its first
	// address, where kube-apiserver, the registry, DNS and S3 listen, and node i the
	// address after it plus i. Each node's pods take the next network of its size,
	// node 1's right after the nodes'. Default: DefaultPodCIDR.
	PodCIDR string
	// Bridge is the host's Linux bridge the nodes join. Default: DefaultBridge.
	Bridge string
	// ClusterDomain is the cluster's DNS domain. Default: DefaultClusterDomain.
	ClusterDomain string
	// GPUs is how many nvidia.com/gpu each node advertises.
	GPUs int
	// RealGPUs advertises the host's GPUs, found through NVML, instead of fake ones:
	// each to one node, its containers given its device nodes alone.
	RealGPUs bool
	// DRAGPUs is how many simulated GPUs each node's DRA driver publishes, as
	// devices of DeviceClass localnode.DRADriver; with none, no driver runs.
	DRAGPUs int
	// Nodes is how many nodes run, each its own Node and pod network: the first
	// named NodeName, node i (from 2) with "-i" added. Each node routes to the
	// others' pods. Default: 1.
	Nodes int
	// Ports are the components' ports; a zero field takes DefaultPorts' value.
	Ports Ports
	// AllowedHostPaths are the host directories pods' hostPath volumes may name
	// (an admission policy refuses any other). Default: none. Pod Security's baseline level,
	// enforced on every namespace but the system ones, refuses hostPath volumes anyway
	// unless the namespace is labelled pod-security.kubernetes.io/enforce=privileged.
	AllowedHostPaths []string
	// ExposedToPods are networks the nodes and pods reach although they are the
	// host's own addresses (the bridge's aside) or link-local, which are otherwise
	// dropped: a dataset server on the host's LAN address, say. Default: none. Not
	// saved with the cluster's settings: each up sets the host's rules to its own.
	ExposedToPods []netip.Prefix
	// Images are directories Up pushes the OCI image layouts of into the cluster's
	// registry: each a layout, or a directory of layouts. _out/images of the source
	// tree around BinDir is pushed too, when it exists.
	Images []string
	// Install, when set (InstallHelm or InstallKustomize), installs tfk8s into the
	// cluster from the images of _out/images instead of running tfk8s-controller as a
	// host process: the controller then runs as pods, as its ServiceAccount with the
	// chart's RBAC only. The CRD and admission policy are then the install's too.
	Install string
	// CompactTFConfigAbove, when set, is the host controller's
	// --compact-tf-config-above: the size of TF_CONFIG beyond which the pods of a job
	// run by the agent carry the cluster (TFK8S_CLUSTER) for the agent to compose
	// TF_CONFIG from; 0: every job with more than one replica. Default: the
	// controller's, 8192 bytes. Not with Install, whose controller the chart configures.
	// Not saved with the cluster's settings: an Up that starts the controller again
	// without it starts it with the default.
	CompactTFConfigAbove *int
	// UnsafeNoFsync runs etcd without fsync: faster, for a test's throw-away cluster.
	// A cluster kept across reboots (the default) must not lose acknowledged writes.
	UnsafeNoFsync bool
	// WithoutNode runs no node: the cluster has its bridge and runs no pods. It lets
	// the rest be tested without a node's cost.
	WithoutNode bool
	// Timeout bounds each wait for a component to become ready. Default: 2 minutes.
	Timeout time.Duration
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

// DefaultDir is ~/.tfk8s/local.
func DefaultDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the home directory for the state directory: %w", err)
	}
	return filepath.Join(home, ".tfk8s", "local"), nil
}

// withDefaults returns opts with every unset field defaulted, and checks them.
func (opts Options) withDefaults() (Options, error) {
	var err error
	if opts.Dir == "" {
		if opts.Dir, err = DefaultDir(); err != nil {
			return opts, err
		}
	}
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return opts, fmt.Errorf("resolving the state directory: %w", err)
	}
	if opts.BinDir == "" {
		// Not found, it stays empty: only Up needs it, and checkBinaries says so.
		opts.BinDir, _ = defaultBinDir()
	}
	if opts.BinDir != "" {
		if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
			return opts, fmt.Errorf("resolving the binary directory: %w", err)
		}
	}
	if opts.UserConfigFile == "" {
		opts.UserConfigFile = storage.DefaultConfigFile()
	}
	opts.NodeName = cmp.Or(opts.NodeName, DefaultNodeName)
	opts.PodCIDR = cmp.Or(opts.PodCIDR, DefaultPodCIDR)
	opts.Bridge = cmp.Or(opts.Bridge, DefaultBridge)
	opts.ClusterDomain = cmp.Or(opts.ClusterDomain, DefaultClusterDomain)
	opts.Ports = opts.Ports.withDefaults()
	opts.Nodes = cmp.Or(opts.Nodes, 1)
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if len(opts.Bridge) > 15 {
		return opts, fmt.Errorf("bridge name %q is longer than 15 characters", opts.Bridge)
	}
	if err := checkInstall(opts.Install); err != nil {
		return opts, err
	}
	if opts.RealGPUs && opts.GPUs > 0 {
		return opts, fmt.Errorf("--gpus %d and --real-gpus: want fake GPUs or the host's, not both", opts.GPUs)
	}
	if opts.GPUs < 0 {
		return opts, fmt.Errorf("--gpus %d is negative", opts.GPUs)
	}
	if opts.DRAGPUs < 0 {
		return opts, fmt.Errorf("--dra-gpus %d is negative", opts.DRAGPUs)
	}
	if err := checkCompactTFConfigAbove(opts); err != nil {
		return opts, err
	}
	if _, err := bridgeIP(opts.PodCIDR); err != nil {
		return opts, err
	}
	if err := checkNodes(opts); err != nil {
		return opts, err
	}
	if err := checkExposedToPods(opts.ExposedToPods); err != nil {
		return opts, err
	}
	return opts, nil
}

// ParseExposedToPods parses --expose-to-pods' CIDRs into Options.ExposedToPods.
func ParseExposedToPods(cidrs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("--expose-to-pods %q: want an IPv4 CIDR such as 192.168.1.20/32", c)
		}
		out = append(out, p)
	}
	return out, checkExposedToPods(out)
}

// checkExposedToPods refuses networks that are not IPv4, the only family the host's
// rules filter, and those with host bits set, which read as one address but are not.
func checkExposedToPods(prefixes []netip.Prefix) error {
	for _, p := range prefixes {
		switch {
		case !p.Addr().Is4():
			return fmt.Errorf("--expose-to-pods %s: want an IPv4 CIDR; pods have no IPv6 route out of the host", p)
		case p != p.Masked():
			return fmt.Errorf("--expose-to-pods %s has bits set past its /%d: write %s, or %s/32 for the one address", p, p.Bits(), p.Masked(), p.Addr())
		}
	}
	return nil
}

// checkCompactTFConfigAbove refuses a negative size, and one the controller would not
// receive: with Install, the chart runs the controller.
func checkCompactTFConfigAbove(opts Options) error {
	switch n := opts.CompactTFConfigAbove; {
	case n == nil:
		return nil
	case *n < 0:
		return fmt.Errorf("--compact-tf-config-above %d is negative: a size in bytes, 0 or more", *n)
	case opts.Install != "":
		return fmt.Errorf("--compact-tf-config-above is the host controller's; with --install %s, set the chart's compactTFConfigAbove", opts.Install)
	}
	return nil
}

// withDefaults fills the zero ports from DefaultPorts.
func (p Ports) withDefaults() Ports { return p.or(DefaultPorts) }

// or fills the zero ports of p from d.
func (p Ports) or(d Ports) Ports {
	return Ports{
		APIServer:         cmp.Or(p.APIServer, d.APIServer),
		Etcd:              cmp.Or(p.Etcd, d.Etcd),
		EtcdPeer:          cmp.Or(p.EtcdPeer, d.EtcdPeer),
		ControllerManager: cmp.Or(p.ControllerManager, d.ControllerManager),
		Scheduler:         cmp.Or(p.Scheduler, d.Scheduler),
		Kubelet:           cmp.Or(p.Kubelet, d.Kubelet),
		DNS:               cmp.Or(p.DNS, d.DNS),
		DNSReady:          cmp.Or(p.DNSReady, d.DNSReady),
		S3:                cmp.Or(p.S3, d.S3),
		ControllerMetrics: cmp.Or(p.ControllerMetrics, d.ControllerMetrics),
		ControllerHealth:  cmp.Or(p.ControllerHealth, d.ControllerHealth),
		Registry:          cmp.Or(p.Registry, d.Registry),
		MetricsServer:     cmp.Or(p.MetricsServer, d.MetricsServer),
	}
}

// bridgeIP is the first address of cidr: the bridge's, where the node-side services
// listen.
func bridgeIP(cidr string) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("parsing pod CIDR %q: %w", cidr, err)
	}
	if !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return netip.Addr{}, fmt.Errorf("pod CIDR %q: want an IPv4 network of at least 4 addresses", cidr)
	}
	return prefix.Masked().Addr().Next(), nil
}

// defaultBinDir finds the binaries as every part of tfk8s does.
func defaultBinDir() (string, error) {
	dir, err := controlplane.DefaultBinDir()
	if err != nil {
		return "", errBinDirNotFound
	}
	return dir, nil
}

// errBinDirNotFound says where the binaries are looked for.
var errBinDirNotFound = errors.New("cannot find the binaries: run tfk8s from bin/ of the tfk8s source tree, or set TFK8S_BIN")

// paths are the files and directories of a state directory.
type paths struct {
	dir, run, nodeState, s3Data  string
	s3IAM                        string
	kubeconfig, s3Config         string
	clusterState, corefile       string
	registryData, registryConfig string
}

// pathsIn lays out the state directory dir.
func pathsIn(dir string) paths {
	run := filepath.Join(dir, "cluster")
	return paths{
		dir:            dir,
		run:            run,
		nodeState:      filepath.Join(dir, "node"),
		s3Data:         filepath.Join(dir, "s3"),
		s3IAM:          filepath.Join(dir, "s3-iam"),
		kubeconfig:     filepath.Join(dir, "kubeconfig"),
		s3Config:       filepath.Join(dir, "s3.yaml"),
		clusterState:   filepath.Join(dir, "cluster.yaml"),
		corefile:       filepath.Join(run, "Corefile"),
		registryData:   filepath.Join(dir, "registry"),
		registryConfig: filepath.Join(run, "registry.yml"),
	}
}
