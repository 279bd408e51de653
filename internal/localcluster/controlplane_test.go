package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// TestAPIServerChecksKubeletServing: kube-apiserver is given the CA that signs each
// node's kubelet serving certificate, and that CA verifies the certificate for the
// node's InternalIP, where the API server dials it for logs and exec, and for its
// name; the CA the kubelets trust for clients verifies none of them.
func TestAPIServerChecksKubeletServing(t *testing.T) {
	dir := t.TempDir()
	opts, err := Options{Dir: dir, BinDir: "/bin", Nodes: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	run := pathsIn(dir).run
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	files := metricsFilesIn(run)
	creds := controlPlaneCreds{kubelet: controlplane.KubeletClientPKIIn(run), agg: controlplane.AggregationPKIIn(run), kubeletCA: files.ServingCA.Cert}
	if err := ensureAggregationPKI(creds.agg, files.ServingCA); err != nil {
		t.Fatal(err)
	}
	if err := creds.kubelet.Ensure(certValidity); err != nil {
		t.Fatal(err)
	}
	configs := upstreamNodeConfigs(opts)
	if err := issueKubeletServing(files.ServingCA, configs); err != nil {
		t.Fatal(err)
	}
	given := controlPlaneOptions(opts, run, creds, nil).KubeletCA
	if given != files.ServingCA.Cert {
		t.Fatalf("kube-apiserver checks kubelets against %q, want the serving CA %s", given, files.ServingCA.Cert)
	}
	trusted, stranger := certPool(t, given), certPool(t, creds.kubelet.CACert)
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
