package localnode

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRenderFirewall(t *testing.T) {
	// The parts of a node's table, in order: the forward chain, the output chain of a
	// host with cgroup v2 (its cgroup's path to fill in), the pods' chain up to the
	// registry's rule, and the rest.
	const forward = `add table ip tfk8s-node
delete table ip tfk8s-node
table ip tfk8s-node {
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "cni0" ip daddr 10.244.0.1 jump pods-to-host
	}
`
	const output = `	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr 10.244.0.1 socket cgroupv2 level 3 != %q jump pods-to-host
	}
`
	const podsToHost = `	chain pods-to-host {
		ct state established,related accept
`
	const tail = `		tcp dport { 53, 6443, 7070 } accept
		udp dport 53 accept
		counter drop
	}
}
`
	const registry = "\t\ttcp dport 5000 counter drop\n"
	tests := []struct {
		name       string
		mutate     func(*Config)
		cgroup2Dir string
		want       string
	}{{
		name:       "hybrid host: hostNetwork pods told from the node by the unified hierarchy",
		cgroup2Dir: "unified",
		want:       forward + fmt.Sprintf(output, "unified/tfk8s/tfk8s-local-0123abcd/system") + podsToHost + registry + tail,
	}, {
		name:       "cgroup v2 host",
		cgroup2Dir: ".",
		want:       forward + fmt.Sprintf(output, "tfk8s/tfk8s-local-0123abcd/system") + podsToHost + registry + tail,
	}, {
		name: "no cgroup v2 hierarchy: pods' forwarded traffic only",
		want: forward + podsToHost + registry + tail,
	}, {
		name:   "an HTTPS registry on its default port",
		mutate: func(c *Config) { c.RegistryMirror = "https://10.244.0.1" },
		want:   forward + podsToHost + "\t\ttcp dport 443 counter drop\n" + tail,
	}, {
		name:   "a registry elsewhere than on the host address: no rule of its own",
		mutate: func(c *Config) { c.RegistryMirror = "http://192.0.2.7:5000" },
		want:   forward + podsToHost + tail,
	}, {
		name:   "S3 on the API server's port: each port once",
		mutate: func(c *Config) { c.HostPorts.S3 = 6443 },
		want:   forward + podsToHost + registry + strings.Replace(tail, "{ 53, 6443, 7070 }", "{ 53, 6443 }", 1),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			if tc.mutate != nil {
				tc.mutate(&c)
			}
			got := renderFirewall(firewallOf(c, tc.cgroup2Dir))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nft script (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckHostPorts(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"a local cluster's ports", func(*Config) {}, ""},
		{"no DNS port", func(c *Config) { c.HostPorts.DNS = 0 }, "hostPorts.dns 0: want a port"},
		{"S3 beyond the ports", func(c *Config) { c.HostPorts.S3 = 70000 }, "hostPorts.s3 70000: want a port"},
		{"S3 on the registry's port", func(c *Config) { c.HostPorts.S3 = 5000 }, "hostPorts.s3 5000 is the registry's"},
		{"the API server on an HTTP registry's default port", func(c *Config) {
			c.RegistryMirror, c.HostPorts.APIServer = "http://10.244.0.1", 80
		}, "hostPorts.apiServer 80 is the registry's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testConfig()
			tc.mutate(&c)
			err := c.Check()
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Check() = %v, want nil", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Check() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
