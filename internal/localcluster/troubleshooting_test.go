package localcluster

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// The errors of docs/troubleshooting.md that a test can make happen here and not
// through local up: up meets them only after it has changed the host (the node's
// bridge, a control plane), which a test may not do beside the shared cluster.

// checkPrinted checks that err, as the CLI prints it ("error: " and the error), is
// the page's line for id.
func checkPrinted(t *testing.T, id string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want the page's %s", id)
	}
	testutil.CheckAsTroubleshootingSays(t, id, "error: "+err.Error())
}

// TestPortInUseAsTroubleshootingSays holds a port and asks the check up runs before
// each control-plane component about it.
func TestPortInUseAsTroubleshootingSays(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := endpoint{"tcp", netip.MustParseAddrPort(l.Addr().String())}
	checkPrinted(t, "port-in-use", checkPorts(compAPIServer, []endpoint{taken}))
}

// TestRouteOverlapAsTroubleshootingSays gives the check up runs before it starts the
// nodes a host route over the default pod network, through another interface.
func TestRouteOverlapAsTroubleshootingSays(t *testing.T) {
	nodes := clusterNodes(defaulted(t, Options{}))
	lan := hostRoute{dst: netip.MustParsePrefix("10.0.0.0/8"), dev: "eth1"}
	checkPrinted(t, "route-overlap", checkPodCIDRsFree(nodes, []hostRoute{lan}))
}

// TestCgroupV2AsTroubleshootingSays gives the check up runs first the root of a cgroup
// v2 mount that passes only cpu down.
func TestCgroupV2AsTroubleshootingSays(t *testing.T) {
	checkPrinted(t, "cgroup-v2", checkCgroups(cgroupRoot(t, true, "cpu\n")))
}

// TestMissingBinaryAsTroubleshootingSays gives the check up runs first a binary
// directory with every component's program but metrics-server's.
func TestMissingBinaryAsTroubleshootingSays(t *testing.T) {
	bin := t.TempDir()
	opts := Options{BinDir: bin, WithoutNode: true}
	for _, c := range components(defaulted(t, opts)) {
		if c.binary != compMetricsServer {
			if err := os.WriteFile(filepath.Join(bin, c.binary), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkPrinted(t, "missing-binary", checkBinaries(opts))
}
