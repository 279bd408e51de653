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

// TestCertificateUsages: a client certificate verifies for client authentication only,
// with its user and groups as subject; a peer's for both; a serving one for serving
// only. A server checking its clients' certificates refuses a serving one.
func TestCertificateUsages(t *testing.T) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := NewCA(Names{CommonName: "test-ca"}, caKey, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	names := Names{CommonName: "system:node:n1", Organization: []string{"system:nodes"}, DNSNames: []string{"localhost"}}
	for _, tc := range []struct {
		name           string
		issue          func(Names, crypto.PublicKey, *x509.Certificate, crypto.Signer, time.Time, time.Duration) ([]byte, error)
		server, client bool
	}{
		{"serving", IssueServing, true, false},
		{"client", IssueClient, false, true},
		{"peer", IssuePeer, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			certPEM, err := tc.issue(names, key.Public(), ca, caKey, now, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(certPEM)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != names.CommonName || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
				t.Errorf("subject %v, want CN %s, O system:nodes", cert.Subject, names.CommonName)
			}
			for usage, want := range map[x509.ExtKeyUsage]bool{x509.ExtKeyUsageServerAuth: tc.server, x509.ExtKeyUsageClientAuth: tc.client} {
				_, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
				if (err == nil) != want {
					t.Errorf("verifying for usage %v: %v, want ok %v", usage, err, want)
				}
			}
		})
	}
}
