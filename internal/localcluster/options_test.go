package localcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

func TestWithDefaults(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	tests := []struct {
		name string
		opts Options
		want Options
	}{
		{
			name: "zero value",
			opts: Options{Dir: "/state", BinDir: "/bin", UserConfigFile: "/home/config"},
			want: Options{
				Dir: "/state", BinDir: "/bin", UserConfigFile: "/home/config",
				NodeName: DefaultNodeName, PodCIDR: DefaultPodCIDR, Bridge: DefaultBridge,
				ClusterDomain: DefaultClusterDomain, Ports: DefaultPorts, Timeout: 2 * time.Minute,
				Nodes: 1,
			},
		},
		{
			name: "given values are kept, unset ports defaulted",
			opts: Options{
				Dir: "/state", BinDir: "/bin", UserConfigFile: "/home/config", NodeName: "n1", PodCIDR: "10.9.8.0/24",
				Bridge: "br-test", ClusterDomain: "test.local", GPUs: 4, Ports: Ports{APIServer: 16443}, Timeout: time.Second,
			},
			want: Options{
				Dir: "/state", BinDir: "/bin", UserConfigFile: "/home/config", NodeName: "n1", PodCIDR: "10.9.8.0/24",
				Bridge: "br-test", ClusterDomain: "test.local", GPUs: 4, Timeout: time.Second,
				Ports: func() Ports { p := DefaultPorts; p.APIServer = 16443; return p }(),
				Nodes: 1,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.opts.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			got.Progress = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWithDefaultsRefuses checks that options up would fail with are refused at once,
// naming the flag or value.
func TestWithDefaultsRefuses(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{
			name:    "bridge name too long",
			opts:    Options{Dir: "/state", BinDir: "/bin", Bridge: "a-very-long-bridge"},
			wantErr: "longer than 15 characters",
		},
		{
			name:    "negative GPUs",
			opts:    Options{Dir: "/state", BinDir: "/bin", GPUs: -1},
			wantErr: "--gpus -1 is negative",
		},
		{
			name:    "negative DRA GPUs",
			opts:    Options{Dir: "/state", BinDir: "/bin", DRAGPUs: -1},
			wantErr: "--dra-gpus -1 is negative",
		},
		{
			name:    "negative TF_CONFIG size",
			opts:    Options{Dir: "/state", BinDir: "/bin", CompactTFConfigAbove: ptr.To(-1)},
			wantErr: "--compact-tf-config-above -1 is negative",
		},
		{
			name:    "TF_CONFIG size with an installed controller",
			opts:    Options{Dir: "/state", BinDir: "/bin", CompactTFConfigAbove: ptr.To(0), Install: InstallHelm},
			wantErr: "with --install helm, set the chart's compactTFConfigAbove",
		},
		{
			name:    "malformed CIDR",
			opts:    Options{Dir: "/state", BinDir: "/bin", PodCIDR: "10.0.0.0"},
			wantErr: `parsing pod CIDR "10.0.0.0"`,
		},
		{
			name:    "unknown install method",
			opts:    Options{Dir: "/state", BinDir: "/bin", Install: "kubectl"},
			wantErr: `--install "kubectl": want helm or kustomize`,
		},
		{
			name:    "IPv6 CIDR",
			opts:    Options{Dir: "/state", BinDir: "/bin", PodCIDR: "fd00::/64"},
			wantErr: "want an IPv4 network",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.opts.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestBridgeIP(t *testing.T) {
	tests := []struct {
		cidr, want string
	}{
		{"10.244.0.0/24", "10.244.0.1"},
		{"10.244.0.77/24", "10.244.0.1"}, // an address inside the network names the network
		{"192.168.4.0/30", "192.168.4.1"},
		{"172.16.0.0/12", "172.16.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.cidr, func(t *testing.T) {
			got, err := bridgeIP(tc.cidr)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("bridgeIP(%s) = %s, want %s", tc.cidr, got, tc.want)
			}
		})
	}
}

func TestDefaultBinDir(t *testing.T) {
	t.Setenv("TFK8S_BIN", "/opt/tfk8s/bin")
	got, err := defaultBinDir()
	if err != nil || got != "/opt/tfk8s/bin" {
		t.Errorf("defaultBinDir() = %q, %v; want $TFK8S_BIN", got, err)
	}
}

func TestParseExposedToPods(t *testing.T) {
	tests := []struct {
		name    string
		cidrs   []string
		want    []string
		wantErr string
	}{
		{name: "none", cidrs: nil},
		{name: "an address and a network", cidrs: []string{"192.168.1.20/32", " 169.254.10.0/24"}, want: []string{"192.168.1.20/32", "169.254.10.0/24"}},
		{name: "an address without its length", cidrs: []string{"192.168.1.20"}, wantErr: `--expose-to-pods "192.168.1.20": want an IPv4 CIDR such as 192.168.1.20/32`},
		{name: "host bits set", cidrs: []string{"192.168.1.20/24"}, wantErr: "--expose-to-pods 192.168.1.20/24 has bits set past its /24: write 192.168.1.0/24, or 192.168.1.20/32 for the one address"},
		{name: "IPv6", cidrs: []string{"fd00::1/128"}, wantErr: "--expose-to-pods fd00::1/128: want an IPv4 CIDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseExposedToPods(tc.cidrs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("networks (-want +got):\n%s", diff)
			}
		})
	}
}
