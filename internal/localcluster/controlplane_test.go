package localcluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// TestAPIServerChecksKubeletServing: the kube-apiserver flags Up's control plane step
// yields name a CA that verifies each node's kubelet serving certificate, as the nodes
// step issues it, for the node's InternalIP, where the API server dials it for logs and
// exec, and for its name; the CA the kubelets trust for clients verifies none of them.
func TestAPIServerChecksKubeletServing(t *testing.T) {
	dir := t.TempDir()
	opts, err := Options{Dir: dir, BinDir: "/bin", Nodes: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	u := newStarter(opts, pathsIn(dir))
	if err := os.MkdirAll(u.paths.run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := u.ensureAggregationPKI(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := u.pki.Ensure(certValidity); err != nil {
		t.Fatal(err)
	}
	configs := upstreamNodeConfigs(opts)
	if err := issueKubeletServing(u.metrics.ServingCA, configs); err != nil {
		t.Fatal(err)
	}
	flags := controlplane.KubeletCAArgs(controlPlaneOptions(opts, u.paths.run, u.controlPlaneCreds(), nil))
	if len(flags) != 1 || !strings.HasPrefix(flags[0], "--kubelet-certificate-authority=") {
		t.Fatalf("kube-apiserver's kubelet CA flags = %q, want one --kubelet-certificate-authority", flags)
	}
	given := strings.TrimPrefix(flags[0], "--kubelet-certificate-authority=")
	trusted, stranger := certPool(t, given), certPool(t, u.pki.CACert)
	for _, c := range configs {
		leaf := readCert(t, c.TLSCertFile)
		for _, host := range []string{c.Address.String(), c.Name} {
			verify := x509.VerifyOptions{DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			verify.Roots = trusted
			if _, err := leaf.Verify(verify); err != nil {
				t.Errorf("node %s: kube-apiserver would refuse its kubelet at %s: %v", c.Name, host, err)
			}
			verify.Roots = stranger
			if _, err := leaf.Verify(verify); err == nil {
				t.Errorf("node %s: the kubelet client CA verifies its serving certificate", c.Name)
			}
		}
	}
}

// certPool holds the certificates of the PEM file path.
func certPool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatalf("no certificate in %s", path)
	}
	return pool
}

// readCert is the first certificate of the PEM file path.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM block in %s", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TestAdoptedAPIServerLacks: up tells the user, with the flag and how to restart it,
// when the kube-apiserver it found running lacks one of the flags it would start it
// with, the kubelet CA's as the aggregation layer's, and says nothing otherwise.
func TestAdoptedAPIServerLacks(t *testing.T) {
	run := t.TempDir()
	caFlags := controlplane.KubeletCAArgs(controlplane.Options{KubeletCA: "/run/serving-ca.crt"})
	aggFlags := controlplane.AggregationPKIIn(run).APIServerArgs()
	tests := []struct {
		name    string
		args    []string // of the running kube-apiserver; nil: up started it
		flags   []string
		wantLog string
	}{
		{name: "started by up", flags: caFlags},
		{name: "adopted with the kubelet CA", args: append(slices.Clone(aggFlags), caFlags...), flags: caFlags},
		{name: "adopted without the kubelet CA", args: aggFlags, flags: caFlags, wantLog: caFlags[0]},
		{name: "adopted without the aggregation layer", args: caFlags, flags: aggFlags, wantLog: aggFlags[0]},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var apiServer *proc.Process
			if tc.args != nil {
				p, err := proc.StartDetached(fmt.Sprintf("kube-apiserver-%d", i), "/bin/sh",
					append([]string{"-c", "sleep 60", "sh"}, tc.args...), nil, run)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Stop(0) })
				apiServer = p
			}
			var logged []string
			logf := func(format string, a ...any) { logged = append(logged, fmt.Sprintf(format, a...)) }
			lacks, err := adoptedAPIServerLacks(apiServer, tc.flags, "something", logf)
			if err != nil {
				t.Fatal(err)
			}
			if lacks != (tc.wantLog != "") {
				t.Errorf("adoptedAPIServerLacks = %v, want %v", lacks, tc.wantLog != "")
			}
			if tc.wantLog == "" {
				if len(logged) != 0 {
					t.Errorf("logged %q, want nothing", logged)
				}
				return
			}
			if len(logged) != 1 || !strings.Contains(logged[0], "runs without "+tc.wantLog) ||
				!strings.Contains(logged[0], "tfk8s local down, then tfk8s local up") {
				t.Errorf("logged %q, want one line naming %s and how to restart it", logged, tc.wantLog)
			}
		})
	}
}
