package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vishvananda/netns"
)

// internet stands in for what lies beyond the host: a network namespace of the test's
// own, joined to the host by a veth, with a TCP server that answers each connection
// with the address it came from.
type internet struct {
	// hostVeth is the host's end of the veth: a new uplink of the host.
	hostVeth string
	// hostAddr is the host's address on it; server is where the server listens.
	hostAddr, server string
	// peers receives the address of each connection the server accepted.
	peers chan string
}

// newInternet makes the internet's namespace, veth and server, in 198.18.0.0/15 (the
// benchmarking range, routed nowhere), and removes them when t ends.
func newInternet(t *testing.T) *internet {
	t.Helper()
	name := fmt.Sprintf("tfk8s-e2e-inet-%d", os.Getpid())
	in := &internet{hostVeth: fmt.Sprintf("tfkinet%d", os.Getpid()%100000), hostAddr: "198.18.0.1", server: "198.18.0.2:8080", peers: make(chan string, 16)}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", name)
	// The veth, and with it the host's route to 198.18.0.0/24, goes with the namespace.
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip("link", "add", in.hostVeth, "type", "veth", "peer", "name", "eth0", "netns", name)
	ip("addr", "add", in.hostAddr+"/24", "dev", in.hostVeth)
	ip("link", "set", in.hostVeth, "up")
	ip("-n", name, "addr", "add", "198.18.0.2/24", "dev", "eth0")
	ip("-n", name, "link", "set", "eth0", "up")
	ln := listenIn(t, name, in.server)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			peer := conn.RemoteAddr().(*net.TCPAddr).IP.String()
			fmt.Fprintf(conn, "peer %s\n", peer)
			_, _ = bufio.NewReader(conn).ReadString('\n') // until the client closes
			conn.Close()
			in.peers <- peer
		}
	}()
	return in
}

// outsides counts the namespaces newOutside made, each its own /24.
var outsides atomic.Int32

// newOutside makes a network namespace of the test's own beyond the host, standing in
// for the internet, joined to the host by a veth, and returns its name; it and the
// veth go when t ends. It returns the namespace's address, 198.19.N.2 (the
// benchmarking range, routed nowhere); the host's is 198.19.N.1, its veth forwarding
// the replies to the pods.
func newOutside(t *testing.T) (name, addr string) {
	t.Helper()
	n := outsides.Add(1)
	name = fmt.Sprintf("tfk8s-e2e-out-%d-%d", os.Getpid(), n)
	veth := fmt.Sprintf("tfko%05d%03d", os.Getpid()%100000, n%1000)
	runIP(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	runIP(t, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
	runIP(t, "addr", "add", fmt.Sprintf("198.19.%d.1/24", n), "dev", veth)
	runIP(t, "link", "set", veth, "up")
	runIP(t, "-n", name, "addr", "add", fmt.Sprintf("198.19.%d.2/24", n), "dev", "eth0")
	runIP(t, "-n", name, "link", "set", "eth0", "up")
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+veth+"/forwarding", []byte("1"), 0o644); err != nil {
		t.Fatalf("letting %s forward replies: %v", veth, err)
	}
	return name, fmt.Sprintf("198.19.%d.2", n)
}

// runIP runs the ip command, failing t with its output.
func runIP(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// listenIn listens on addr in the named network namespace. The socket stays in the
// namespace it was made in, so only the making needs the thread to enter it.
func listenIn(t *testing.T, name, addr string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	host, err := netns.Get()
	if err != nil {
		t.Fatalf("opening the test's network namespace: %v", err)
	}
	defer host.Close()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatalf("opening network namespace %s: %v", name, err)
	}
	defer ns.Close()
	if err := netns.Set(ns); err != nil {
		t.Fatalf("entering network namespace %s: %v", name, err)
	}
	ln, listenErr := net.Listen("tcp", addr)
	if err := netns.Set(host); err != nil {
		t.Fatalf("leaving network namespace %s: %v", name, err) // the thread stays locked and dies
	}
	runtime.UnlockOSThread()
	if listenErr != nil {
		t.Fatalf("listening on %s in %s: %v", addr, name, listenErr)
	}
	return ln
}
