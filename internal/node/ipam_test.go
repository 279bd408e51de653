package node

import (
	"net"
	"net/netip"
	"testing"
)

func TestNextFreeIP(t *testing.T) {
	addrs := func(ss ...string) map[netip.Addr]bool {
		m := map[netip.Addr]bool{}
		for _, s := range ss {
			m[netip.MustParseAddr(s)] = true
		}
		return m
	}
	cases := []struct {
		name    string
		cidr    string
		last    string
		used    map[netip.Addr]bool
		want    string
		wantErr bool
	}{
		{name: "first after the gateway", cidr: "10.244.0.0/24", last: "10.244.0.1", want: "10.244.0.2"},
		{name: "after the last handed out", cidr: "10.244.0.0/24", last: "10.244.0.7", want: "10.244.0.8"},
		{name: "skips used", cidr: "10.244.0.0/24", last: "10.244.0.1", used: addrs("10.244.0.2", "10.244.0.3"), want: "10.244.0.4"},
		{name: "wraps past broadcast, network and gateway", cidr: "10.244.0.0/24", last: "10.244.0.254", want: "10.244.0.2"},
		{name: "last outside the network starts over", cidr: "10.244.0.0/24", last: "192.168.0.9", want: "10.244.0.2"},
		{name: "non-zero network", cidr: "10.244.3.0/24", last: "10.244.3.1", want: "10.244.3.2"},
		{name: "a /30 has one pod address", cidr: "10.0.0.0/30", last: "10.0.0.1", want: "10.0.0.2"},
		{name: "full", cidr: "10.0.0.0/30", last: "10.0.0.1", used: addrs("10.0.0.2"), wantErr: true},
		{name: "released address is reused last", cidr: "10.0.0.0/29", last: "10.0.0.3", used: addrs("10.0.0.2"), want: "10.0.0.4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cidr, err := parsePodCIDR(tc.cidr)
			if err != nil {
				t.Fatal(err)
			}
			got, err := nextFreeIP(cidr, netip.MustParseAddr(tc.last), tc.used)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParsePodCIDR(t *testing.T) {
	cases := []struct {
		in, want, gateway string
		wantErr           bool
	}{
		{in: "10.244.0.0/24", want: "10.244.0.0/24", gateway: "10.244.0.1"},
		{in: "10.244.0.9/24", want: "10.244.0.0/24", gateway: "10.244.0.1"},
		{in: "10.0.0.0/31", wantErr: true},
		{in: "fd00::/64", wantErr: true},
		{in: "10.0.0.0", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parsePodCIDR(tc.in)
			if tc.wantErr != (err != nil) {
				t.Fatalf("error %v, want error %t", err, tc.wantErr)
			}
			if err == nil && (got.String() != tc.want || got.gateway().String() != tc.gateway) {
				t.Errorf("got %s gateway %s, want %s gateway %s", got, got.gateway(), tc.want, tc.gateway)
			}
		})
	}
}

func TestIPAMPersists(t *testing.T) {
	cidr, _ := parsePodCIDR("10.0.0.0/29")
	dir := t.TempDir()
	m, err := newIPAM(cidr, dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.allocate("pod-a")
	b, _ := m.allocate("pod-b")
	if again, _ := m.allocate("pod-a"); again != a {
		t.Errorf("pod-a got %s then %s, want the same address", a, again)
	}
	if a == b {
		t.Fatalf("two pods got %s", a)
	}
	// A fresh allocator over the same directory knows both and continues after b.
	m2, err := newIPAM(cidr, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := m2.allocate("pod-b"); got != b {
		t.Errorf("after restart pod-b got %s, want %s", got, b)
	}
	if err := m2.release("pod-a"); err != nil {
		t.Fatal(err)
	}
	c, _ := m2.allocate("pod-c")
	if c == a || c == b {
		t.Errorf("pod-c got %s, want neither %s (just released) nor %s", c, a, b)
	}
}

func TestBridgeMAC(t *testing.T) {
	a, b := bridgeMAC("tfk8s0"), bridgeMAC("tfk8s1")
	if a.String() != bridgeMAC("tfk8s0").String() {
		t.Errorf("bridgeMAC is not deterministic")
	}
	if a.String() == b.String() {
		t.Errorf("two bridges got the same MAC %s", a)
	}
	for _, mac := range []net.HardwareAddr{a, b} {
		if mac[0]&0x02 == 0 || mac[0]&0x01 != 0 {
			t.Errorf("%s is not a locally administered unicast address", mac)
		}
	}
}
