package localcluster

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// endpoint is an address a component listens on.
type endpoint struct {
	proto string // "tcp" or "udp"
	addr  netip.AddrPort
}

func (e endpoint) String() string { return e.addr.String() + "/" + e.proto }

// socket is a bound socket read from /proc/net.
type socket struct {
	proto string
	addr  netip.AddrPort
	inode string
}

// checkPorts returns an error naming the first of a component's endpoints that another
// process holds, and that process when it can be found.
func checkPorts(component string, eps []endpoint) error {
	sockets, err := boundSockets()
	if err != nil {
		return err
	}
	for _, e := range eps {
		for _, s := range sockets {
			if conflicts(e, s) {
				return fmt.Errorf("port %d/%s on %s, needed by %s, is in use%s: stop that program first%s",
					e.addr.Port(), e.proto, e.addr.Addr(), component, socketOwner(s.inode), portHint(component))
			}
		}
	}
	return nil
}

// portHint says how to give a component another port, where a flag can.
func portHint(component string) string {
	if component == compAPIServer {
		return ", or choose another port with --apiserver-port"
	}
	return ""
}

// conflicts reports whether the socket s keeps a new socket from binding to e: the
// same protocol and port, and the same address or a wildcard. An IPv6 wildcard counts,
// since it also takes IPv4 unless it is v6-only.
func conflicts(e endpoint, s socket) bool {
	if e.proto != s.proto || e.addr.Port() != s.addr.Port() {
		return false
	}
	a := s.addr.Addr()
	return a == e.addr.Addr() || a.IsUnspecified()
}

// boundSockets lists the listening TCP sockets and the bound UDP sockets of the host's
// network namespace.
func boundSockets() ([]socket, error) {
	var all []socket
	for _, f := range []struct{ proto, file string }{
		{"tcp", "/proc/net/tcp"}, {"tcp", "/proc/net/tcp6"}, {"udp", "/proc/net/udp"}, {"udp", "/proc/net/udp6"},
	} {
		data, err := os.ReadFile(f.file)
		if os.IsNotExist(err) { // no IPv6 on this host
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading bound sockets: %w", err)
		}
		sockets, err := parseProcNet(f.proto, data)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", f.file, err)
		}
		all = append(all, sockets...)
	}
	return all, nil
}

// Socket states in /proc/net: a TCP socket that listens, a UDP socket that is bound
// but not connected.
const (
	tcpListen   = "0A"
	udpUnconned = "07"
)

// parseProcNet reads a /proc/net/{tcp,tcp6,udp,udp6} table and keeps the sockets that
// hold a port: TCP ones listening, UDP ones unconnected.
func parseProcNet(proto string, data []byte) ([]socket, error) {
	want := tcpListen
	if proto == "udp" {
		want = udpUnconned
	}
	var sockets []socket
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if fields[3] != want {
			continue
		}
		addr, err := parseHexAddrPort(fields[1])
		if err != nil {
			return nil, err
		}
		sockets = append(sockets, socket{proto: proto, addr: addr, inode: fields[9]})
	}
	return sockets, sc.Err()
}

// parseHexAddrPort reads the kernel's ADDR:PORT, the address as 32-bit words in host
// (little-endian) order, the port big-endian.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// socketOwner names the process holding the socket with this inode, as " by pid N
// (name)", or "" when none is found.
func socketOwner(inode string) string {
	target := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if link, err := os.Readlink(fd); err == nil && link == target {
			pidDir := filepath.Dir(filepath.Dir(fd))
			comm, _ := os.ReadFile(filepath.Join(pidDir, "comm"))
			return fmt.Sprintf(" by pid %s (%s)", filepath.Base(pidDir), strings.TrimSpace(string(comm)))
		}
	}
	return ""
}

// FreePorts picks free ports for every component of a cluster, DNS on 53 (it listens
// on the cluster's own bridge address): for clusters started side by side, as tests do.
func FreePorts() (Ports, error) {
	p, err := proc.FreePorts(12)
	if err != nil {
		return Ports{}, err
	}
	return Ports{
		APIServer: p[0], Etcd: p[1], EtcdPeer: p[2], ControllerManager: p[3], Scheduler: p[4],
		Kubelet: p[5], DNS: 53, DNSReady: p[6], S3: p[7], ControllerMetrics: p[8], ControllerHealth: p[9],
		Registry: p[10], MetricsServer: p[11],
	}, nil
}
