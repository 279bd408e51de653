package localcluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// defaultCorefile is the Corefile of a cluster with the default settings.
const defaultCorefile = `.:53 {
    bind 10.244.0.1
    errors
    ready 127.0.0.1:10282
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig "/state/kubeconfig" tfk8s-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    forward . /etc/resolv.conf
    cache 30
    loop
}
`

func TestRenderCorefile(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		// replace are the lines of defaultCorefile that change, old to new.
		replace map[string]string
	}{
		{name: "defaults"},
		{
			name: "other network, domain and ports",
			opts: Options{PodCIDR: "10.77.3.0/24", ClusterDomain: "example.test", Ports: Ports{DNS: 5353, DNSReady: 18181}},
			replace: map[string]string{
				".:53 {":                   ".:5353 {",
				"bind 10.244.0.1":          "bind 10.77.3.1",
				"ready 127.0.0.1:10282":    "ready 127.0.0.1:18181",
				"kubernetes cluster.local": "kubernetes example.test",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := defaulted(t, tc.opts)
			got, err := renderCorefile(opts, "/state/kubeconfig")
			if err != nil {
				t.Fatal(err)
			}
			want := defaultCorefile
			for old, new := range tc.replace {
				want = strings.Replace(want, old, new, 1)
			}
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("Corefile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComponents(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		wantNames []string
		wantAddrs map[string][]string
	}{
		{
			name:      "defaults",
			wantNames: allComponents,
			wantAddrs: map[string][]string{
				compEtcd:       {"127.0.0.1:2379/tcp", "127.0.0.1:2380/tcp"},
				compAPIServer:  {"10.244.0.1:6443/tcp"},
				compRegistry:   {"10.244.0.1:5000/tcp"},
				compDNS:        {"10.244.0.1:53/udp", "10.244.0.1:53/tcp", "127.0.0.1:10282/tcp"},
				compS3:         {"10.244.0.1:7070/tcp"},
				compController: {"127.0.0.1:10280/tcp", "127.0.0.1:10281/tcp"},
				// The aggregation layer reaches it from the API server's side of the bridge.
				compMetricsServer: {"10.244.0.1:10283/tcp"},
			},
		},
		{
			name:      "without a node",
			opts:      Options{WithoutNode: true, PodCIDR: "10.99.0.0/16", Ports: Ports{APIServer: 16443, S3: 17070}},
			wantNames: []string{compEtcd, compAPIServer, compControllerManager, compScheduler, compRegistry, compDNS, compS3, compMetricsServer, compController},
			wantAddrs: map[string][]string{
				compAPIServer: {"10.99.0.1:16443/tcp"},
				compS3:        {"10.99.0.1:17070/tcp"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := defaulted(t, tc.opts)
			var names []string
			addrs := map[string][]string{}
			for _, c := range components(opts) {
				names = append(names, c.name)
				if _, ok := tc.wantAddrs[c.name]; ok {
					for _, e := range c.endpoints {
						addrs[c.name] = append(addrs[c.name], e.String())
					}
				}
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("components (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAddrs, addrs); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	opts := defaulted(t, Options{
		GPUs: 2, UserConfigFile: "/home/ann/.tfk8s/config", AllowedHostPaths: []string{"/data", "/srv"},
	})
	p := pathsIn(opts.Dir)
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{
			name: "registry",
			got:  registryArgs(p),
			want: []string{"serve", "/state/cluster/registry.yml"},
		},
		{
			name: "versitygw",
			got:  s3Args(opts, p),
			want: []string{"--port", "10.244.0.1:7070", "--quiet", "--iam-dir", "/state/s3-iam", "posix", "/state/s3"},
		},
		{
			name: "tfk8s-controller",
			got:  controllerArgs(opts, p),
			want: []string{
				"--kubeconfig=/state/kubeconfig", "--metrics-bind-address=127.0.0.1:10280",
				"--health-probe-bind-address=127.0.0.1:10281", "--leader-elect=false", "--cluster-domain=cluster.local",
				"--gang-scheduler=native", "--kubeflow",
			},
		},
		{
			name: "tfk8s-controller composing every TF_CONFIG in the agent",
			got: func() []string {
				o := opts
				o.CompactTFConfigAbove = ptr.To(0)
				return controllerArgs(o, p)[7:]
			}(),
			want: []string{"--compact-tf-config-above=0"},
		},
		{
			name: "kube-apiserver's kubelet flags",
			got:  apiServerArgs(controlplane.KubeletClientPKIIn(p.run)),
			want: []string{
				"--kubelet-client-certificate=/state/cluster/apiserver-kubelet-client.crt",
				"--kubelet-client-key=/state/cluster/apiserver-kubelet-client.key",
				"--kubelet-preferred-address-types=InternalIP",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// defaulted is opts with the state directory /state, binaries in /bin and the
// defaults.
func defaulted(t *testing.T, opts Options) Options {
	t.Helper()
	opts.Dir, opts.BinDir = "/state", "/bin"
	opts, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestRegistryConfig: storage in the state directory, plain HTTP on the bridge's
// address, the account of the htpasswd in the state directory only.
func TestRegistryConfig(t *testing.T) {
	opts := defaulted(t, Options{Ports: Ports{Registry: 15000}})
	want := `# The image registry of the tfk8s local cluster (tfk8s local up).
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: "/state/registry"
  delete:
    enabled: true
http:
  addr: "10.244.0.1:15000"
auth:
  htpasswd:
    realm: tfk8s-local
    path: "/state/cluster/registry.htpasswd"
`
	if diff := cmp.Diff(want, string(registryConfig(opts, pathsIn(opts.Dir)))); diff != "" {
		t.Errorf("registry.yml (-want +got):\n%s", diff)
	}
}
