package localnode

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// testConfig is a node as a two-node local cluster makes it.
func testConfig() Config {
	return Config{
		Name:                  "tfk8s-local",
		StateDir:              "/var/lib/tfk8s/node",
		BinDir:                "/opt/tfk8s/bin",
		Kubeconfig:            "/var/lib/tfk8s/node/kubelet.kubeconfig",
		ProxyKubeconfig:       "/var/lib/tfk8s/node/kube-proxy.kubeconfig",
		ProvisionerKubeconfig: "/var/lib/tfk8s/node/provisioner.kubeconfig",
		ClientCAFile:          "/var/lib/tfk8s/node/ca.crt",
		TLSCertFile:           "/var/lib/tfk8s/node/kubelet-serving.crt",
		TLSKeyFile:            "/var/lib/tfk8s/node/kubelet-serving.key",
		Bridge:                "tfk8s0",
		HostAddress:           netip.MustParsePrefix("10.244.0.1/24"),
		Address:               netip.MustParseAddr("10.244.0.2"),
		PodCIDR:               netip.MustParsePrefix("10.244.1.0/24"),
		Peers:                 []Peer{{Address: netip.MustParseAddr("10.244.0.3"), PodCIDR: netip.MustParsePrefix("10.244.2.0/24")}},
		ClusterCIDR:           netip.MustParsePrefix("10.244.0.0/22"),
		ClusterDNS:            netip.MustParseAddr("10.96.0.10"),
		ClusterDomain:         "cluster.local",
		RegistryMirror:        "http://10.244.0.1:5000",
		HostPorts:             HostPorts{APIServer: 6443, DNS: 53, S3: 7070},
		SandboxImage:          "registry.k8s.io/pause:3.10.2",
		GPUs:                  2,
		CgroupRoot:            "/tfk8s/tfk8s-local-0123abcd",
		KubeletPort:           10250,
		Resolvers:             []netip.Addr{netip.MustParseAddr("10.244.0.1")},
	}
}

func TestConfigCheck(t *testing.T) {
	if err := testConfig().Check(); err != nil {
		t.Fatalf("a local cluster's node config was refused: %v", err)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"state under /run", func(c *Config) {
			c.StateDir = "/run/tfk8s"
			c.Kubeconfig = "/run/tfk8s/k"
			c.ClientCAFile = "/run/tfk8s/c"
		}, "stateDir /run/tfk8s lies under /run"},
		{"kubeconfig elsewhere", func(c *Config) { c.Kubeconfig = "/root/.kube/config" }, `kubeconfig "/root/.kube/config" is not in stateDir`},
		{"address outside the bridge network", func(c *Config) { c.Address = netip.MustParseAddr("10.245.0.2") }, "address 10.245.0.2: want another address of hostAddress's network 10.244.0.0/24"},
		{"address is the host's", func(c *Config) { c.Address = c.HostAddress.Addr() }, "address 10.244.0.1"},
		{"pods outside the cluster CIDR", func(c *Config) { c.ClusterCIDR = netip.MustParsePrefix("10.0.0.0/16") }, "clusterCIDR 10.0.0.0/16 does not contain podCIDR 10.244.1.0/24"},
		{"long bridge name", func(c *Config) { c.Bridge = "a-bridge-too-long" }, `bridge "a-bridge-too-long"`},
		{"serving certificate without its key", func(c *Config) { c.TLSKeyFile = "" }, `tlsKeyFile ""`},
		{"serving key outside the state", func(c *Config) { c.TLSKeyFile = "/etc/kubelet.key" }, `tlsKeyFile "/etc/kubelet.key" is not in stateDir`},
		{"relative cgroup", func(c *Config) { c.CgroupRoot = "tfk8s" }, `cgroupRoot "tfk8s"`},
		{"negative GPUs", func(c *Config) { c.GPUs = -1 }, "gpus -1"},
		{"negative DRA GPUs", func(c *Config) { c.DRAGPUs = -1 }, "draGPUs -1: want 0 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.mutate(&c)
			err := c.Check()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Check() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestKubeletConfigIsStrict decodes the kubelet's configuration with the kubelet's own
// type, refusing unknown fields: a misspelt field would be ignored by a lenient reader.
func TestKubeletConfigIsStrict(t *testing.T) {
	data, err := renderKubeletConfig(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict(data, &got); err != nil {
		t.Fatalf("the kubelet would not read its configuration: %v\n%s", err, data)
	}
	checks := []struct{ field, got, want string }{
		{"cgroupRoot", got.CgroupRoot, "/tfk8s/tfk8s-local-0123abcd"},
		{"cgroupDriver", got.CgroupDriver, "cgroupfs"},
		{"address", got.Address, "10.244.0.2"},
		{"clientCAFile", got.Authentication.X509.ClientCAFile, "/var/lib/tfk8s/node/ca.crt"},
		{"tlsCertFile", got.TLSCertFile, "/var/lib/tfk8s/node/kubelet-serving.crt"},
		{"tlsPrivateKeyFile", got.TLSPrivateKeyFile, "/var/lib/tfk8s/node/kubelet-serving.key"},
		{"authorization mode", string(got.Authorization.Mode), "Webhook"},
		{"containerRuntimeEndpoint", got.ContainerRuntimeEndpoint, "unix:///var/lib/tfk8s/node/containerd.sock"},
		{"clusterDNS", strings.Join(got.ClusterDNS, ","), "10.96.0.10"},
		{"podLogsDir", got.PodLogsDir, "/var/lib/tfk8s/node/logs"},
		{"containerLogMaxSize", got.ContainerLogMaxSize, "10Mi"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if got.FailCgroupV1 == nil || *got.FailCgroupV1 {
		t.Errorf("failCgroupV1 = %v, want false: these hosts have cgroup v1", got.FailCgroupV1)
	}
	if got.Authentication.Anonymous.Enabled == nil || *got.Authentication.Anonymous.Enabled {
		t.Error("the kubelet API accepts anonymous requests")
	}
	if got.ReadOnlyPort != 0 {
		t.Errorf("readOnlyPort = %d, want 0: no unauthenticated port", got.ReadOnlyPort)
	}
}

func TestContainerdConfig(t *testing.T) {
	data, err := renderContainerdConfig(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version int    `toml:"version"`
		Root    string `toml:"root"`
		GRPC    struct {
			Address string `toml:"address"`
		} `toml:"grpc"`
		Plugins map[string]map[string]any `toml:"plugins"`
	}
	if _, err := toml.Decode(string(data), &got); err != nil {
		t.Fatalf("containerd's configuration is not TOML: %v\n%s", err, data)
	}
	runtime := got.Plugins["io.containerd.cri.v1.runtime"]
	images := got.Plugins["io.containerd.cri.v1.images"]
	checks := []struct {
		field string
		got   any
		want  any
	}{
		{"version", got.Version, 3},
		{"root", got.Root, "/var/lib/tfk8s/node/containerd"},
		{"grpc address", got.GRPC.Address, "/var/lib/tfk8s/node/containerd.sock"},
		{"restrict_oom_score_adj", runtime["restrict_oom_score_adj"], true},
		{"netns_mounts_under_state_dir", runtime["netns_mounts_under_state_dir"], true},
		{"cni", runtime["cni"], map[string]any{"bin_dirs": []any{"/opt/tfk8s/bin/cni"}, "conf_dir": "/var/lib/tfk8s/node/cni"}},
		{"cdi_spec_dirs", runtime["cdi_spec_dirs"], []any{"/var/lib/tfk8s/node/cdi"}},
		{"sandbox", images["pinned_images"], map[string]any{"sandbox": "registry.k8s.io/pause:3.10.2"}},
		{"registry", images["registry"], map[string]any{"config_path": "/var/lib/tfk8s/node/certs.d"}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.field, diff)
		}
	}
}

func TestMirrorHosts(t *testing.T) {
	type host struct {
		Capabilities []string          `toml:"capabilities"`
		Header       map[string]string `toml:"header"`
	}
	const mirror = "http://10.244.0.1:5000"
	tests := []struct {
		name, authorization string
		want                host
	}{
		{name: "no account", want: host{Capabilities: []string{"pull", "resolve"}}},
		{
			name: "the registry's account sent with every request", authorization: "Basic dGZrOHM6c2VjcmV0",
			want: host{Capabilities: []string{"pull", "resolve"}, Header: map[string]string{"Authorization": "Basic dGZrOHM6c2VjcmV0"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got map[string]map[string]host
			if _, err := toml.Decode(string(renderMirrorHosts(mirror, tc.authorization)), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got["host"][mirror]); diff != "" {
				t.Errorf("the mirror (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCNIConfig(t *testing.T) {
	data, err := renderCNIConfig(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
			IPMasq bool `json:"ipMasq"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Plugins) != 2 || got.Plugins[0].Type != "bridge" || got.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins: want bridge then portmap, got\n%s", data)
	}
	if s := got.Plugins[0].IPAM.Ranges[0][0].Subnet; s != "10.244.1.0/24" {
		t.Errorf("pods' subnet %s, want the node's pod CIDR 10.244.1.0/24", s)
	}
	if got.Plugins[0].IPMasq {
		t.Error("the node masquerades its pods: pods of other nodes would see the node's address, not theirs")
	}
}
