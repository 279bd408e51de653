package localnode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
)

// The node's configuration files are pure functions of its Config, written by the
// inner half before it starts each program.

// runcPath is Debian's runc, which the shim runs containers with.
const runcPath = "/usr/sbin/runc"

// containerdTemplate is containerd's configuration: its root on the node's state
// directory, CRI with runc under cgroupfs, the node's CNI configuration, and every
// registry mirrored by the cluster's (hosts.toml under certs.d).
//
// restrict_oom_score_adj: hosts without CAP_SYS_RESOURCE cannot lower a process's
// oom_score_adj, and runc fails to start a container that asks for less than its own.
// cdi_spec_dirs is where the node's DRA driver writes the CDI specs of the devices it
// prepares (dra.go), so that containerd injects them into the containers.
// netns_mounts_under_state_dir keeps the pods' network namespaces under /run/containerd,
// a tmpfs of the node's mount namespace, rather than the host's /var/run/netns.
var containerdTemplate = template.Must(template.New("containerd.toml").Parse(`version = 3
root = {{printf "%q" .Root}}
state = "/run/containerd"
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
  "io.containerd.nri.v1.nri",
]

[grpc]
  address = {{printf "%q" .Socket}}

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = false
  enable_unprivileged_icmp = false
  cdi_spec_dirs = [{{printf "%q" .CDIDir}}]

  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"

    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = {{printf "%q" .Runc}}
        SystemdCgroup = false

  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [{{printf "%q" .CNIBinDir}}]
    conf_dir = {{printf "%q" .CNIConfDir}}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"

  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = {{printf "%q" .SandboxImage}}

  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = {{printf "%q" .CertsDir}}
`))

// renderContainerdConfig returns containerd's configuration file.
func renderContainerdConfig(c Config) ([]byte, error) {
	p := pathsOf(c)
	return execute(containerdTemplate, map[string]string{
		"Root":         p.containerdRoot,
		"Socket":       p.containerdSocket,
		"Runc":         runcPath,
		"CNIBinDir":    filepath.Join(c.BinDir, "cni"),
		"CNIConfDir":   p.cniConfDir,
		"CDIDir":       p.cdiDir,
		"SandboxImage": c.SandboxImage,
		"CertsDir":     p.certsDir,
	})
}

// renderMirrorHosts returns certs.d/_default/hosts.toml: containerd asks the cluster's
// registry first for every image, under the image's own repository path, sending
// authorization if any, then the image's own registry.
func renderMirrorHosts(mirror, authorization string) []byte {
	if mirror == "" {
		return nil
	}
	b := fmt.Appendf(nil, "[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", mirror)
	if authorization != "" {
		b = fmt.Appendf(b, "  [host.%q.header]\n    Authorization = %q\n", mirror, authorization)
	}
	return b
}

// cniConfList is the node's pod network: a bridge whose address is the pods' gateway,
// addresses from the node's pod CIDR, and host ports. No masquerade here: pods reach
// other nodes' pods by their own addresses, and the host masquerades what leaves it.
type cniConfList struct {
	CNIVersion string           `json:"cniVersion"`
	Name       string           `json:"name"`
	Plugins    []map[string]any `json:"plugins"`
}

// cniBridge is the bridge of the node's pods, inside the node's network namespace.
const cniBridge = "cni0"

// renderCNIConfig returns the node's CNI configuration list.
func renderCNIConfig(c Config) ([]byte, error) {
	list := cniConfList{
		CNIVersion: "1.0.0",
		Name:       "tfk8s",
		Plugins: []map[string]any{
			{
				"type":        "bridge",
				"bridge":      cniBridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": [][]map[string]string{{{"subnet": c.PodCIDR.Masked().String()}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
			{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the CNI configuration: %w", err)
	}
	return append(data, '\n'), nil
}

// kubeletTemplate is the kubelet's configuration. Webhook authorization and x509
// client certificates guard its API; cgroupfs under the node's own cgroup root; cgroup
// v1 allowed (these hosts have it) and swap tolerated. Containers' logs rotate at
// 10 MiB, five files each, so no pod can fill the host's disk. The kubelet's address
// is the node's own, which the API server reaches for logs and exec.
var kubeletTemplate = template.Must(template.New("kubelet.yaml").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.Address}}
port: {{.Port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {{printf "%q" .ClientCAFile}}
authorization:
  mode: Webhook
{{- if .TLSCertFile}}
tlsCertFile: {{printf "%q" .TLSCertFile}}
tlsPrivateKeyFile: {{printf "%q" .TLSKeyFile}}
{{- end}}
containerRuntimeEndpoint: {{printf "%q" .RuntimeEndpoint}}
cgroupDriver: cgroupfs
cgroupRoot: {{printf "%q" .CgroupRoot}}
failCgroupV1: false
failSwapOn: false
clusterDNS:
- {{.ClusterDNS}}
clusterDomain: {{printf "%q" .ClusterDomain}}
resolvConf: {{printf "%q" .ResolvConf}}
podLogsDir: {{printf "%q" .PodLogsDir}}
containerLogMaxSize: 10Mi
containerLogMaxFiles: 5
serializeImagePulls: false
imageGCHighThresholdPercent: 95
imageGCLowThresholdPercent: 90
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
evictionPressureTransitionPeriod: 10s
nodeStatusReportFrequency: 10s
protectKernelDefaults: false
enforceNodeAllocatable:
- pods
`))

// renderKubeletConfig returns the kubelet's configuration file.
func renderKubeletConfig(c Config) ([]byte, error) {
	p := pathsOf(c)
	return execute(kubeletTemplate, map[string]string{
		"Address":         c.Address.String(),
		"Port":            strconv.Itoa(c.KubeletPort),
		"ClientCAFile":    c.ClientCAFile,
		"TLSCertFile":     c.TLSCertFile,
		"TLSKeyFile":      c.TLSKeyFile,
		"RuntimeEndpoint": "unix://" + p.containerdSocket,
		"CgroupRoot":      c.CgroupRoot,
		"ClusterDNS":      c.ClusterDNS.String(),
		"ClusterDomain":   c.ClusterDomain,
		"ResolvConf":      p.resolvConf,
		"PodLogsDir":      p.logsDir,
	})
}

// kubeletArgs are the kubelet's flags beside its configuration file.
func kubeletArgs(c Config) []string {
	p := pathsOf(c)
	return []string{
		"--config=" + p.kubeletConfig,
		"--kubeconfig=" + c.Kubeconfig,
		"--hostname-override=" + c.Name,
		"--node-ip=" + c.Address.String(),
		"--root-dir=" + kubeletRootDir,
		"--v=1",
	}
}

// proxyTemplate is kube-proxy's configuration, in nftables mode. Conntrack's limits and
// timeouts are left as the host has them (0), since they are the host's, not the
// node's.
var proxyTemplate = template.Must(template.New("kube-proxy.yaml").Parse(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: {{printf "%q" .Kubeconfig}}
hostnameOverride: {{printf "%q" .Name}}
clusterCIDR: {{.ClusterCIDR}}
bindAddress: {{.Address}}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`))

// renderProxyConfig returns kube-proxy's configuration file.
func renderProxyConfig(c Config) ([]byte, error) {
	return execute(proxyTemplate, map[string]string{
		"Kubeconfig":  c.ProxyKubeconfig,
		"Name":        c.Name,
		"ClusterCIDR": c.ClusterCIDR.String(),
		"Address":     c.Address.String(),
	})
}

// renderResolvConf returns the resolv.conf of pods whose dnsPolicy is Default: the
// host's name servers as the node sees them.
func renderResolvConf(servers []netip.Addr) []byte {
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	return []byte(b.String())
}

// execute runs a template into bytes.
func execute(t *template.Template, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", t.Name(), err)
	}
	return buf.Bytes(), nil
}
