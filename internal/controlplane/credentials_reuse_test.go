package controlplane

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLoadOrWriteCredentialsReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if first.adminToken == "" || second.adminToken != first.adminToken || string(second.caCertPEM) != string(first.caCertPEM) {
		t.Error("the credentials were not reused")
	}
	if err := os.Remove(filepath.Join(dir, "sa.key")); err != nil {
		t.Fatal(err)
	}
	third, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if third.adminToken == first.adminToken {
		t.Error("incomplete credentials were reused")
	}
}

// TestLoadOrWriteCredentialsNamesTheKubernetesService: a kept serving certificate
// that does not name the kubernetes Service's address (made by an older tfk8s) is
// replaced by one from the same CA that does, the other credentials kept.
func TestLoadOrWriteCredentialsNamesTheKubernetesService(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	caCert, caKey := readCA(t, first)
	old := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, old, caCert, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.servingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if second.adminToken != first.adminToken || string(second.caCertPEM) != string(first.caCertPEM) {
		t.Error("the other credentials were not kept")
	}
	pair, err := tls.LoadX509KeyPair(second.servingCert, second.servingKey)
	if err != nil {
		t.Fatalf("the new certificate and key: %v", err)
	}
	cert, _ := x509.ParseCertificate(pair.Certificate[0])
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("the new certificate is not the CA's: %v", err)
	}
	if err := cert.VerifyHostname(KubernetesServiceIP); err != nil {
		t.Errorf("the new certificate does not name the kubernetes Service: %v", err)
	}
}

// readCA reads the CA certificate and key of c.
func readCA(t *testing.T, c *credentials) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.caCert, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert, pair.PrivateKey.(*ecdsa.PrivateKey)
}
