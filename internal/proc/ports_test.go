package proc

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortsAvoidTheEphemeralRange checks that FreePorts hands out distinct ports
// below the kernel's ephemeral range, where no outgoing connection takes them, and that
// each can be listened on once it returns.
func TestFreePortsAvoidTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(11)
	if err != nil {
		t.Fatal(err)
	}
	lo := ephemeralPortsStart()
	seen := map[int]bool{}
	for _, p := range ports {
		if p < minPort || p >= lo || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d); got %v", p, minPort, lo, ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free after FreePorts: %v", p, err)
			continue
		}
		l.Close()
	}
}
