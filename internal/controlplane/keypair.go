package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// KeyPair names a certificate's PEM file and its key's.
type KeyPair struct{ Cert, Key string }

// Exists reports whether both files exist: a cluster kept across Up calls keeps its
// certificates, so that what trusts them need not be told again.
func (k KeyPair) Exists() bool { return allExist(k.Cert, k.Key) }

// EnsureCA writes a self-signed CA called commonName, valid for validity, unless k's
// files exist already.
func (k KeyPair) EnsureCA(commonName string, validity time.Duration) error {
	if k.Exists() {
		return nil
	}
	ca, key, err := newCA(commonName, time.Now(), validity)
	if err != nil {
		return fmt.Errorf("writing CA %s: %w", commonName, err)
	}
	return k.write(pki.CertPEM(ca.Raw), key)
}

// Usage is what an issued certificate is for.
type Usage int

const (
	// ServerAuth certificates serve TLS.
	ServerAuth Usage = iota
	// ClientAuth certificates authenticate their user to a server.
	ClientAuth
)

// EnsureIssued writes a certificate for names that the CA in ca signs, valid for
// validity, unless k's files hold one still good: signed by that CA, naming every one
// of names' addresses and DNS names, and valid for a day more. A cluster brought up
// again with another --pod-cidr, or a CA made anew, gets certificates that verify.
func (k KeyPair) EnsureIssued(ca KeyPair, names pki.Names, usage Usage, validity time.Duration) error {
	caCert, caKey, err := loadCA(&credentials{caCert: ca.Cert, caKey: ca.Key})
	if err != nil {
		return fmt.Errorf("issuing %s: %w", names.CommonName, err)
	}
	if k.Exists() && k.stillGood(caCert, names) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	issue := pki.IssueServing
	if usage == ClientAuth {
		issue = pki.IssueClient
	}
	certPEM, err := issue(names, &key.PublicKey, caCert, caKey, time.Now(), validity)
	if err != nil {
		return err
	}
	return k.write(certPEM, key)
}

// stillGood reports whether k's certificate chains to caCert, names every one of
// names' IPs and DNS names, and is valid for a day more; an unreadable one is not.
func (k KeyPair) stillGood(caCert *x509.Certificate, names pki.Names) bool {
	data, err := os.ReadFile(k.Cert)
	if err != nil {
		return false
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil || cert.CheckSignatureFrom(caCert) != nil || time.Until(cert.NotAfter) < 24*time.Hour {
		return false
	}
	for _, dns := range names.DNSNames {
		if !slices.Contains(cert.DNSNames, dns) {
			return false
		}
	}
	return namesEvery(cert, names.IPs)
}

// write saves the certificate and its key, the key first: a certificate found without
// its key would count as written.
func (k KeyPair) write(certPEM []byte, key *ecdsa.PrivateKey) error {
	if err := safewrite.File(k.Key, pemECKey(key), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", k.Key, err)
	}
	if err := safewrite.File(k.Cert, certPEM, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", k.Cert, err)
	}
	return nil
}
