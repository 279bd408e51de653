package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetricsServerArgs: metrics-server listens on the bridge, checks the kubelets'
// serving certificates against the serving CA (never --kubelet-insecure-tls),
// presents the client certificate the kubelets trust, and reaches them at their
// InternalIP, as node names resolve nowhere on the host.
func TestMetricsServerArgs(t *testing.T) {
	opts := defaulted(t, Options{PodCIDR: "10.99.0.0/16", Ports: Ports{MetricsServer: 20283}})
	files := metricsFilesIn(pathsIn(opts.Dir).run)
	args := metricsServerArgs(opts, files)
	flags := flagValues(args)
	want := map[string]string{
		"--bind-address":                    "10.99.0.1",
		"--secure-port":                     "20283",
		"--kubelet-certificate-authority":   files.ServingCA.Cert,
		"--kubelet-client-certificate":      files.KubeletClient.Cert,
		"--tls-cert-file":                   files.Serving.Cert,
		"--kubelet-preferred-address-types": "InternalIP",
	}
	for flag, value := range want {
		if got, ok := flags[flag]; !ok || got != value {
			t.Errorf("%s = %q (set: %v), want %q", flag, got, ok, value)
		}
	}
	if _, ok := flags["--kubelet-insecure-tls"]; ok {
		t.Errorf("metrics-server skips checking the kubelets' certificates: %v", args)
	}
}

// flagValues maps each --flag=value of args to its value, a bare --flag to "".
func flagValues(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		m[name] = value
	}
	return m
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
