package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"testing"
	"time"
)

// TestServingCertificateVerifies: a serving certificate the CA issued verifies against
// the CA for each name and address it was issued for, and for no other, with ECDSA
// keys (the control plane's) and RSA keys (Kueue's); it expires with its validity.
func TestServingCertificateVerifies(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name   string
		newKey func() (crypto.Signer, error)
	}{
		{"ECDSA", func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }},
		{"RSA", func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caKey, err := tc.newKey()
			if err != nil {
				t.Fatal(err)
			}
			ca, err := NewCA(Names{CommonName: "test-ca", DNSNames: []string{"test-ca"}}, caKey, now, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			key, err := tc.newKey()
			if err != nil {
				t.Fatal(err)
			}
			names := Names{CommonName: "svc", DNSNames: []string{"svc.ns.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
			certPEM, err := IssueServing(names, key.Public(), ca, caKey, now, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(certPEM)
			if block == nil {
				t.Fatalf("no PEM in %q", certPEM)
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			for _, c := range []struct {
				host string
				at   time.Time
				ok   bool
			}{
				{"svc.ns.svc", now, true},
				{"127.0.0.1", now, true},
				{"other.ns.svc", now, false},
				{"svc.ns.svc", now.Add(2 * time.Hour), false},
			} {
				_, err := cert.Verify(x509.VerifyOptions{DNSName: c.host, Roots: roots, CurrentTime: c.at})
				if (err == nil) != c.ok {
					t.Errorf("verifying for %s at now+%v: %v, want ok %v", c.host, c.at.Sub(now).Round(time.Minute), err, c.ok)
				}
			}
			if _, err := ca.Verify(x509.VerifyOptions{DNSName: "test-ca", Roots: roots, CurrentTime: now}); err != nil {
				t.Errorf("the CA does not verify as test-ca: %v", err)
			}
		})
	}
}
