package localcluster

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstreamOpts are the resolved options of a two-node upstream cluster in the
// default state directory.
func upstreamOpts() Options {
	return Options{Dir: "/root/.tfk8s/local", Nodes: 2, PodCIDR: DefaultPodCIDR, Bridge: DefaultBridge}
}

func TestHostNetTable(t *testing.T) {
	tests := []struct{ dir, want string }{
		{"/root/.tfk8s/local", "tfk8s-194c0679"},
		{"/var/lib/tfk8s-e2e-123", "tfk8s-14c7f694"}, // another cluster, another table
	}
	for _, tc := range tests {
		if got := hostNetTable(tc.dir); got != tc.want {
			t.Errorf("hostNetTable(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

func TestRenderHostNet(t *testing.T) {
	const table = `add table ip tfk8s-194c0679
delete table ip tfk8s-194c0679
table ip tfk8s-194c0679 {
	set uplinks {
		type ifname
		comment "VERSION"
ELEMENTS	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr { 10.244.0.0/24, 10.244.1.0/24, 10.244.2.0/24 } oifname != "tfk8s0" masquerade
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname @uplinks ct state established,related accept
		iifname @uplinks counter drop
EXPOSED		iifname "tfk8s0" ip daddr 169.254.0.0/16 counter drop
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "tfk8s0" ct state established,related accept
EXPOSED		iifname "tfk8s0" ip daddr != 10.244.0.1 fib daddr type local counter drop
	}
}
`
	tests := []struct {
		name     string
		record   forwardingRecord
		elements string
		exposed  []netip.Prefix
	}{
		{name: "forwarding turned on for the bridge only: no uplink filtered", record: forwardingRecord{"tfk8s0": "0"}},
		{name: "uplinks sorted, the bridge left out", record: forwardingRecord{"tfk8s0": "0", "wlan0": "0", "eth0": "0"}, elements: "\t\telements = { \"eth0\", \"wlan0\" }\n"},
		{
			name:    "a LAN dataset server on the host and one link-local address exposed",
			record:  forwardingRecord{"tfk8s0": "0"},
			exposed: []netip.Prefix{netip.MustParsePrefix("192.168.1.20/32"), netip.MustParsePrefix("169.254.10.0/24")},
		},
	}
	versions := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := upstreamOpts()
			opts.ExposedToPods = tc.exposed
			script, version := renderHostNet(hostNetOf(opts, tc.record))
			var exposed string
			if tc.exposed != nil {
				exposed = "\t\tiifname \"tfk8s0\" ip daddr { 192.168.1.20/32, 169.254.10.0/24 } accept\n"
			}
			want := strings.NewReplacer("VERSION", version, "ELEMENTS", tc.elements, "EXPOSED", exposed).Replace(table)
			if diff := cmp.Diff(want, script); diff != "" {
				t.Errorf("nft script (-want +got):\n%s", diff)
			}
			versions[version] = true
		})
	}
	if len(versions) != len(tests) {
		t.Errorf("versions %v: want one for each set of rules", versions)
	}
	if _, again := renderHostNet(hostNetOf(upstreamOpts(), forwardingRecord{"tfk8s0": "0"})); !versions[again] {
		t.Errorf("version %q of the same rules rendered again is new", again)
	}
}

func TestPlanForwarding(t *testing.T) {
	want := []string{"tfk8s0", "eth0", "wg0"}
	tests := []struct {
		name       string
		current    map[string]string
		record     forwardingRecord
		claimed    map[string]bool
		wantTurnOn []string
		wantRecord forwardingRecord
	}{{
		name:       "first up: the bridge and the uplinks that are off",
		current:    map[string]string{"tfk8s0": "0", "eth0": "0", "wg0": "1"},
		wantTurnOn: []string{"tfk8s0", "eth0"},
		wantRecord: forwardingRecord{"tfk8s0": "0", "eth0": "0"},
	}, {
		name:       "second up: nothing to do",
		current:    map[string]string{"tfk8s0": "1", "eth0": "1", "wg0": "1"},
		record:     forwardingRecord{"tfk8s0": "0", "eth0": "0"},
		wantRecord: forwardingRecord{"tfk8s0": "0", "eth0": "0"},
	}, {
		name:       "a recorded flag set back by someone is turned on again, its previous value kept",
		current:    map[string]string{"tfk8s0": "1", "eth0": "0", "wg0": "1"},
		record:     forwardingRecord{"tfk8s0": "0", "eth0": "0"},
		wantTurnOn: []string{"eth0"},
		wantRecord: forwardingRecord{"tfk8s0": "0", "eth0": "0"},
	}, {
		name:       "an uplink another cluster turned on is held on too",
		current:    map[string]string{"tfk8s0": "0", "eth0": "1", "wg0": "1"},
		claimed:    map[string]bool{"eth0": true},
		wantTurnOn: []string{"tfk8s0"},
		wantRecord: forwardingRecord{"tfk8s0": "0", "eth0": "0"},
	}, {
		name:       "an interface gone since the routes were read is left out",
		current:    map[string]string{"tfk8s0": "0", "eth0": "0"},
		record:     forwardingRecord{"old0": "0"},
		wantTurnOn: []string{"tfk8s0", "eth0"},
		wantRecord: forwardingRecord{"tfk8s0": "0", "eth0": "0", "old0": "0"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			turnOn, record := planForwarding(want, tc.current, tc.record, tc.claimed)
			if diff := cmp.Diff(tc.wantTurnOn, turnOn); diff != "" {
				t.Errorf("turned on (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRecord, record); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanRestore(t *testing.T) {
	record := forwardingRecord{"tfk8s0": "0", "eth0": "0", "wg0": "0", "veth9": "0"}
	tests := []struct {
		name    string
		current map[string]string
		claimed map[string]bool
		want    map[string]string
	}{{
		name:    "every flag back; the bridge and a veth are gone",
		current: map[string]string{"eth0": "1", "wg0": "1"},
		want:    map[string]string{"eth0": "0", "wg0": "0"},
	}, {
		name:    "an uplink another cluster holds on stays on",
		current: map[string]string{"eth0": "1", "wg0": "1"},
		claimed: map[string]bool{"eth0": true},
		want:    map[string]string{"wg0": "0"},
	}, {
		name:    "a flag back already is not written",
		current: map[string]string{"eth0": "0", "wg0": "1"},
		want:    map[string]string{"wg0": "0"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, planRestore(record, tc.current, tc.claimed)); diff != "" {
				t.Errorf("restored (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostNetLeftovers(t *testing.T) {
	record := forwardingRecord{"tfk8s0": "0", "eth0": "0", "wg0": "0"}
	tests := []struct {
		name string
		obs  hostNetObserved
		want []string
	}{{
		name: "nothing left: no table, every flag back or its interface gone",
		obs:  hostNetObserved{record: record, forwarding: map[string]string{"eth0": "0", "wg0": "0"}},
	}, {
		name: "the table and the flags not back",
		obs:  hostNetObserved{record: record, exists: true, forwarding: map[string]string{"eth0": "1", "wg0": "1"}},
		want: []string{"nftables table ip tfk8s-194c0679", "sysctl net.ipv4.conf.eth0.forwarding=1 (was 0)", "sysctl net.ipv4.conf.wg0.forwarding=1 (was 0)"},
	}, {
		name: "a flag another cluster holds on is not left behind",
		obs:  hostNetObserved{record: record, forwarding: map[string]string{"eth0": "1", "wg0": "0"}, claimed: map[string]bool{"eth0": true}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, hostNetLeftoversOf(tc.obs, "tfk8s-194c0679")); diff != "" {
				t.Errorf("left behind (-want +got):\n%s", diff)
			}
		})
	}
}
