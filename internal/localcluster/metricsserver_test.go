package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetricsServerArgs: metrics-server listens on the bridge, checks the kubelets'
// serving certificates against the serving CA (never --kubelet-insecure-tls), reaches
// them at their InternalIP and status port, and scrapes every 10 s.
func TestMetricsServerArgs(t *testing.T) {
	opts := defaulted(t, Options{PodCIDR: "10.99.0.0/16", Ports: Ports{MetricsServer: 20283}})
	want := []string{
		"--bind-address=10.99.0.1",
		"--secure-port=20283",
		"--tls-cert-file=/state/cluster/metrics-server.crt",
		"--tls-private-key-file=/state/cluster/metrics-server.key",
		"--kubeconfig=/state/cluster/metrics-server.kubeconfig",
		"--authentication-kubeconfig=/state/cluster/metrics-server.kubeconfig",
		"--authorization-kubeconfig=/state/cluster/metrics-server.kubeconfig",
		"--kubelet-certificate-authority=/state/cluster/serving-ca.crt",
		"--kubelet-client-certificate=/state/cluster/metrics-server-kubelet-client.crt",
		"--kubelet-client-key=/state/cluster/metrics-server-kubelet-client.key",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--kubelet-request-timeout=5s",
		"--metric-resolution=10s",
	}
	if diff := cmp.Diff(want, metricsServerArgs(opts, metricsFilesIn(pathsIn(opts.Dir).run))); diff != "" {
		t.Errorf("metricsServerArgs (-want +got):\n%s", diff)
	}
}

// TestKubeletServingInNodeConfig: each node's kubelet serves with a certificate in its
// own state directory, which the node can read.
func TestKubeletServingInNodeConfig(t *testing.T) {
	opts := defaulted(t, Options{Nodes: 2})
	var got [][2]string
	for _, c := range upstreamNodeConfigs(opts) {
		got = append(got, [2]string{c.TLSCertFile, c.TLSKeyFile})
		if err := c.Check(); err != nil {
			t.Errorf("node %s: %v", c.Name, err)
		}
	}
	want := [][2]string{
		{"/state/node/kubelet-serving.crt", "/state/node/kubelet-serving.key"},
		{"/state/node-2/kubelet-serving.crt", "/state/node-2/kubelet-serving.key"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kubelet serving files (-want +got):\n%s", diff)
	}
}

// TestHTTPSClientTrustingNamesTheFile: a serving CA file missing or without a
// certificate is named in the error up reports.
func TestHTTPSClientTrustingNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "serving-ca.crt")
	if err := os.WriteFile(empty, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{filepath.Join(dir, "missing.crt"), empty} {
		if _, _, err := httpsClientTrusting(file, "metrics-server"); err == nil || !strings.Contains(err.Error(), file) {
			t.Errorf("httpsClientTrusting(%s) error = %v, want one naming the file", file, err)
		}
	}
}
