package localcluster

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// procNetTCP is a /proc/net/tcp table: 127.0.0.1:6443 and 0.0.0.0:22 listen, one
// connection is established.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:192B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:192B 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1
`

// procNetUDP6 is a /proc/net/udp6 table: [::]:53 bound, [::1]:5353 connected.
const procNetUDP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  10: 00000000000000000000000000000000:0035 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2001 2 0000000000000000 0
  11: 00000000000000000000000001000000:14E9 00000000000000000000000001000000:0035 01 00000000:00000000 00:00000000 00000000     0        0 2002 2 0000000000000000 0
`

func TestParseProcNet(t *testing.T) {
	tests := []struct {
		name  string
		proto string
		data  string
		want  []socket
	}{
		{
			name: "tcp: listeners only", proto: "tcp", data: procNetTCP,
			want: []socket{
				{proto: "tcp", addr: netip.MustParseAddrPort("127.0.0.1:6443"), inode: "1001"},
				{proto: "tcp", addr: netip.MustParseAddrPort("0.0.0.0:22"), inode: "1002"},
			},
		},
		{
			name: "udp6: unconnected sockets only", proto: "udp", data: procNetUDP6,
			want: []socket{{proto: "udp", addr: netip.MustParseAddrPort("[::]:53"), inode: "2001"}},
		},
		{
			name: "header only", proto: "tcp", data: "  sl  local_address rem_address   st\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcNet(tc.proto, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(socket{}), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("sockets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseHexAddrPort(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "0100007F:0035", want: "127.0.0.1:53"},
		{in: "0100F40A:1B9E", want: "10.244.0.1:7070"},
		{in: "0000000000000000FFFF00000100007F:1F90", want: "127.0.0.1:8080"}, // v4-mapped
		{in: "00000000000000000000000001000000:0016", want: "[::1]:22"},
		{in: "0100007F", wantErr: "malformed"},
		{in: "01007F:0035", wantErr: "malformed"},
		{in: "0100007F:XYZ", wantErr: "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseHexAddrPort(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("parseHexAddrPort(%s) = %v, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	ep := func(proto, addr string) endpoint { return endpoint{proto, netip.MustParseAddrPort(addr)} }
	sock := func(proto, addr string) socket { return socket{proto: proto, addr: netip.MustParseAddrPort(addr)} }
	tests := []struct {
		name string
		e    endpoint
		s    socket
		want bool
	}{
		{"same address", ep("tcp", "127.0.0.1:6443"), sock("tcp", "127.0.0.1:6443"), true},
		{"IPv4 wildcard", ep("tcp", "10.244.0.1:7070"), sock("tcp", "0.0.0.0:7070"), true},
		{"IPv6 wildcard", ep("udp", "10.244.0.1:53"), sock("udp", "[::]:53"), true},
		{"other address", ep("udp", "10.244.0.1:53"), sock("udp", "127.0.0.53:53"), false},
		{"other port", ep("tcp", "127.0.0.1:6443"), sock("tcp", "127.0.0.1:6444"), false},
		{"other protocol", ep("tcp", "10.244.0.1:53"), sock("udp", "10.244.0.1:53"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := conflicts(tc.e, tc.s); got != tc.want {
				t.Errorf("conflicts(%v, %v) = %v, want %v", tc.e, tc.s.addr, got, tc.want)
			}
		})
	}
}

func TestCheckPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()

	ep := func(port int) endpoint {
		return endpoint{"tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))}
	}
	if err := checkPorts("kube-apiserver", []endpoint{ep(freePort)}); err != nil {
		t.Errorf("free port %d: %v", freePort, err)
	}
	err = checkPorts("kube-apiserver", []endpoint{ep(freePort), ep(taken)})
	want := "port " + strconv.Itoa(taken) + "/tcp on 127.0.0.1, needed by kube-apiserver, is in use by pid " + strconv.Itoa(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("taken port: error = %v, want one containing %q", err, want)
	}
}
