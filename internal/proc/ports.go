package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// FreePorts reserves n distinct free TCP ports on 127.0.0.1, the one free-port helper
// of the whole tree. The ports lie below the kernel's ephemeral range: a port from that
// range, free when chosen, may become the local port of any process's outgoing
// connection before the server meant for it listens (a local cluster's CoreDNS found
// its port taken by kube-controller-manager's connection while the registry was being
// filled). The listeners are held until all ports are chosen, so the same port is
// never handed out twice.
func FreePorts(n int) ([]int, error) {
	lo := ephemeralPortsStart()
	if lo-minPort < 100*n {
		return nil, fmt.Errorf("no room for %d ports between %d and the ephemeral range at %d", n, minPort, lo)
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n && tries < 1000; tries++ {
		port := minPort + rand.IntN(lo-minPort)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken, or held by an earlier pick
		}
		defer l.Close()
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found %d free ports of %d between %d and %d", len(ports), n, minPort, lo)
	}
	return ports, nil
}

// minPort is the lowest port FreePorts hands out: above the well-known and most
// registered services' ports.
const minPort = 10000

// ephemeralPortsStart is the first port of the kernel's ephemeral range, 32768 unless
// net.ipv4.ip_local_port_range says otherwise.
func ephemeralPortsStart() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(data), &lo, &hi); err != nil || lo <= minPort {
		return 32768
	}
	return lo
}
