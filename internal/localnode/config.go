package localnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// Config is one node: its name, where its state and binaries are, and its place in the
// cluster's networks. tfk8s-nodeinit reads it from the node's state directory.
type Config struct {
	// Name is the Node's name, and the node's hostname.
	Name string `json:"name"`
	// StateDir holds the node's state (see the package documentation).
	StateDir string `json:"stateDir"`
	// BinDir holds kubelet, kube-proxy, containerd, its shim and cni/.
	BinDir string `json:"binDir"`
	// Kubeconfig, ProxyKubeconfig and ProvisionerKubeconfig are how the kubelet,
	// kube-proxy and the claim provisioner reach the API server, each as an identity
	// of its own. ClientCAFile is the CA whose client certificates the kubelet API
	// trusts: the API server's, for logs and exec. All lie in StateDir, since the
	// node sees /var/lib and /var/log of its own (BinDir is read where it is).
	Kubeconfig            string `json:"kubeconfig"`
	ProxyKubeconfig       string `json:"proxyKubeconfig"`
	ProvisionerKubeconfig string `json:"provisionerKubeconfig"`
	ClientCAFile          string `json:"clientCAFile"`
	// TLSCertFile and TLSKeyFile are the kubelet API's serving certificate and key,
	// signed by a CA its clients (metrics-server) are given. Unset, the kubelet signs
	// a certificate itself, which no client can check.
	TLSCertFile string `json:"tlsCertFile,omitempty"`
	TLSKeyFile  string `json:"tlsKeyFile,omitempty"`

	// Bridge is the host's bridge the node's veth joins; HostAddress is the host's
	// address on it, with the nodes' network. The API server, S3, DNS and the
	// registry listen there.
	Bridge      string       `json:"bridge"`
	HostAddress netip.Prefix `json:"hostAddress"`
	// Address is the node's own address on the bridge's network.
	Address netip.Addr `json:"address"`
	// PodCIDR is the node's pod network.
	PodCIDR netip.Prefix `json:"podCIDR"`
	// Peers are the other nodes: their pods are reached through their addresses.
	Peers []Peer `json:"peers,omitempty"`
	// ClusterCIDR covers every node's pod network: kube-proxy's --cluster-cidr.
	ClusterCIDR netip.Prefix `json:"clusterCIDR"`

	// ClusterDNS is the cluster's DNS Service address; ClusterDomain its domain.
	ClusterDNS    netip.Addr `json:"clusterDNS"`
	ClusterDomain string     `json:"clusterDomain"`
	// RegistryMirror is the URL of the registry containerd looks in first for every
	// image, under the image's own repository path.
	RegistryMirror string `json:"registryMirror"`
	// RegistryAuthorization is the Authorization header containerd sends the mirror:
	// the registry serves only its account.
	RegistryAuthorization string `json:"registryAuthorization,omitempty"`
	// HostPorts are the only ports of HostAddress the node's pods may reach; the node
	// drops what else they send there, so that only containerd pulls from the registry.
	HostPorts HostPorts `json:"hostPorts"`
	// SandboxImage is the pause image of every pod.
	SandboxImage string `json:"sandboxImage"`
	// GPUs is how many fake nvidia.com/gpu the node advertises.
	GPUs int `json:"gpus"`
	// RealGPUs are the host's GPUs the node advertises instead, each given to one
	// node alone.
	RealGPUs []gpus.Device `json:"realGPUs,omitempty"`
	// DRAGPUs is how many simulated GPUs the node's DRA driver publishes, as devices
	// of driver DRADriver; none runs with 0.
	DRAGPUs int `json:"draGPUs,omitempty"`
	// CgroupRoot is the cgroup under which the node's processes and pods run, in
	// every hierarchy.
	CgroupRoot string `json:"cgroupRoot"`
	// KubeletPort is the kubelet API's port on Address.
	KubeletPort int `json:"kubeletPort"`
	// Resolvers are the name servers pods with dnsPolicy Default use: the host's.
	Resolvers []netip.Addr `json:"resolvers,omitempty"`
}

// Peer is another node of the cluster.
type Peer struct {
	Address netip.Addr   `json:"address"`
	PodCIDR netip.Prefix `json:"podCIDR"`
}

// configFile is the name of a node's Config in its state directory.
const configFile = "node.json"

// ConfigPath is where the Config of the node in stateDir lives.
func ConfigPath(stateDir string) string { return filepath.Join(stateDir, configFile) }

// Check refuses a Config the node cannot run on, naming the field.
func (c Config) Check() error {
	var errs []error
	need := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	need(c.Name != "", "name is empty")
	need(filepath.IsAbs(c.StateDir), "stateDir %q is not an absolute path", c.StateDir)
	errs = append(errs, checkOutsideRun("stateDir", filepath.Clean(c.StateDir)))
	errs = append(errs, checkOutsideRun("binDir", filepath.Clean(c.BinDir)))
	need(filepath.IsAbs(c.BinDir), "binDir %q is not an absolute path", c.BinDir)
	need(underAny(c.Kubeconfig, []string{c.StateDir}), "kubeconfig %q is not in stateDir", c.Kubeconfig)
	need(underAny(c.ProxyKubeconfig, []string{c.StateDir}), "proxyKubeconfig %q is not in stateDir", c.ProxyKubeconfig)
	need(underAny(c.ProvisionerKubeconfig, []string{c.StateDir}), "provisionerKubeconfig %q is not in stateDir", c.ProvisionerKubeconfig)
	need(underAny(c.ClientCAFile, []string{c.StateDir}), "clientCAFile %q is not in stateDir", c.ClientCAFile)
	need((c.TLSCertFile == "") == (c.TLSKeyFile == ""), "tlsCertFile %q and tlsKeyFile %q: want both or neither", c.TLSCertFile, c.TLSKeyFile)
	need(c.TLSCertFile == "" || underAny(c.TLSCertFile, []string{c.StateDir}), "tlsCertFile %q is not in stateDir", c.TLSCertFile)
	need(c.TLSKeyFile == "" || underAny(c.TLSKeyFile, []string{c.StateDir}), "tlsKeyFile %q is not in stateDir", c.TLSKeyFile)
	need(c.Bridge != "" && len(c.Bridge) <= 15, "bridge %q: want a name of 1 to 15 characters", c.Bridge)
	need(c.HostAddress.IsValid() && c.HostAddress.Addr().Is4(), "hostAddress %v: want an IPv4 address with its prefix", c.HostAddress)
	need(c.Address.Is4() && c.HostAddress.Contains(c.Address) && c.Address != c.HostAddress.Addr(),
		"address %v: want another address of hostAddress's network %v", c.Address, c.HostAddress.Masked())
	need(c.PodCIDR.IsValid() && c.PodCIDR.Bits() <= 30, "podCIDR %v: want an IPv4 network of at least 4 addresses", c.PodCIDR)
	need(c.ClusterCIDR.IsValid() && c.ClusterCIDR.Contains(c.PodCIDR.Addr()), "clusterCIDR %v does not contain podCIDR %v", c.ClusterCIDR, c.PodCIDR)
	need(c.ClusterDNS.IsValid(), "clusterDNS is not set")
	need(c.ClusterDomain != "", "clusterDomain is empty")
	need(c.SandboxImage != "", "sandboxImage is empty")
	need(c.GPUs >= 0, "gpus %d: want 0 or more", c.GPUs)
	need(c.GPUs == 0 || len(c.RealGPUs) == 0, "gpus %d and realGPUs: want fake GPUs or real ones, not both", c.GPUs)
	need(c.DRAGPUs >= 0, "draGPUs %d: want 0 or more", c.DRAGPUs)
	need(filepath.IsAbs(c.CgroupRoot), "cgroupRoot %q is not an absolute cgroup path", c.CgroupRoot)
	need(c.KubeletPort > 0 && c.KubeletPort < 65536, "kubeletPort %d: want a TCP port", c.KubeletPort)
	errs = append(errs, c.checkHostPorts())
	return errors.Join(errs...)
}

// Save writes c to its state directory, creating the directory.
func (c Config) Save() error {
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating the node's state directory: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the node's config: %w", err)
	}
	return safewrite.File(ConfigPath(c.StateDir), append(data, '\n'), 0o600)
}

// LoadConfig reads and checks a node's Config.
func LoadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("reading the node's config: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("decoding the node's config %s: %w", path, err)
	}
	if err := c.Check(); err != nil {
		return c, fmt.Errorf("node config %s: %w", path, err)
	}
	return c, nil
}

// paths are the files and directories of a node, on its state directory.
type paths struct {
	containerdRoot, containerdConfig, containerdSocket string
	certsDir, cniConfDir, cdiDir, kubeletDir, logsDir  string
	volumes                                            string
	kubeletConfig, proxyConfig, resolvConf             string
}

// pathsOf names the files of the node in c.StateDir.
func pathsOf(c Config) paths {
	in := func(name string) string { return filepath.Join(c.StateDir, name) }
	return paths{
		containerdRoot:   in("containerd"),
		containerdConfig: in("containerd.toml"),
		containerdSocket: in("containerd.sock"),
		certsDir:         in("certs.d"),
		cniConfDir:       in("cni"),
		cdiDir:           in("cdi"),
		kubeletDir:       in("kubelet"),
		logsDir:          in("logs"),
		volumes:          in("volumes"),
		kubeletConfig:    in("kubelet.yaml"),
		proxyConfig:      in("kube-proxy.yaml"),
		resolvConf:       in("resolv.conf"),
	}
}
