package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// metadataAddr is where clouds serve a VM's metadata and credentials.
const metadataAddr = "169.254.169.254"

// testHostNetHidden: a pod reaches neither a link-local address (169.254.169.254,
// served from a namespace of the test's own beyond the host) nor the host's own
// address on that namespace's veth (a stand-in for its LAN address), while the host
// reaches both; an up with --expose-to-pods naming them lets the pod through.
func (c *upstreamCluster) testHostNetHidden(t *testing.T) {
	ctx := t.Context()
	name, peer := newOutside(t)
	runIP(t, "-n", name, "addr", "add", metadataAddr+"/32", "dev", "eth0")
	runIP(t, "route", "add", metadataAddr+"/32", "via", peer)
	t.Cleanup(func() { runIP(t, "route", "del", metadataAddr+"/32") })
	metadata := serve(t, listenIn(t, name, metadataAddr+":80"), "credentials")
	hostAddr := netip.MustParseAddr(peer).Prev() // the host's end of the veth
	lan, err := net.Listen("tcp", net.JoinHostPort(hostAddr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	lanServer := serve(t, lan, "dataset")
	for what, addr := range map[string]string{"credentials": metadata, "dataset": lanServer} {
		if got := dialRead(addr); got != what {
			t.Fatalf("the host reads %q from %s, want %q", got, addr, what)
		}
	}
	script := fmt.Sprintf(`import socket
for name, addr in [("metadata", %q), ("hostlan", %q)]:
    host, port = addr.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=3)
        print(name, "read", s.makefile().readline().strip(), flush=True)
    except OSError as e:
        print(name, "unreachable:", e, flush=True)
`, metadata, lanServer)
	// A pod of its own name each time: run deletes without waiting for the pod to go.
	probe := func(name, want string) {
		t.Helper()
		phase, log := c.run(ctx, t, podOn(name, c.nodes[1], "python3", "-c", script))
		if log != want {
			t.Errorf("the pod (%s) printed:\n%swant:\n%s", phase, log, want)
		}
	}
	probe("hostnet-closed", "metadata unreachable: timed out\nhostlan unreachable: timed out\n")

	opts := c.opts
	opts.Progress = testWriter{t}
	exposed, err := localcluster.ParseExposedToPods([]string{metadataAddr + "/32", hostAddr.String() + "/32"})
	if err != nil {
		t.Fatal(err)
	}
	opts.ExposedToPods = exposed
	if _, err := localcluster.Up(ctx, opts); err != nil {
		t.Fatalf("up with --expose-to-pods: %v", err)
	}
	t.Cleanup(func() {
		opts.ExposedToPods = nil
		// Not t.Context(): it is done before cleanups run.
		if _, err := localcluster.Up(context.Background(), opts); err != nil {
			t.Errorf("up without --expose-to-pods: %v", err)
		}
	})
	probe("hostnet-exposed", "metadata read credentials\nhostlan read dataset\n")
}

// serve answers each connection to ln with line, until t ends, and returns ln's
// address.
func serve(t *testing.T, ln net.Listener, line string) string {
	t.Helper()
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(conn, line)
			conn.Close()
		}
	}()
	return ln.Addr().String()
}

// dialRead reads the first line the server at addr sends, or says why it could not.
func dialRead(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	return strings.TrimSpace(string(buf[:n]))
}
