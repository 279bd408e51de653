package controlplane

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestKubeletClientPKI(t *testing.T) {
	pki := KubeletClientPKIIn(t.TempDir())
	if err := pki.Ensure(time.Hour); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(pki.ClientCert)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.Ensure(time.Hour); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(pki.ClientCert); string(again) != string(first) {
		t.Error("Ensure replaced an existing certificate")
	}
	pair, err := tls.LoadX509KeyPair(pki.ClientCert, pki.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(pki.CACert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the client certificate does not verify against the CA a node trusts: %v", err)
	}
}

// TestKubeletCAArgs: with a kubelet CA, kube-apiserver checks the kubelets' serving
// certificates against it; without one (no nodes), its flags name none.
func TestKubeletCAArgs(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "no nodes", opts: Options{}},
		{name: "nodes", opts: Options{KubeletCA: "/run/serving-ca.crt"}, want: []string{"--kubelet-certificate-authority=/run/serving-ca.crt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, KubeletCAArgs(tc.opts)); diff != "" {
				t.Errorf("KubeletCAArgs (-want +got):\n%s", diff)
			}
		})
	}
}
