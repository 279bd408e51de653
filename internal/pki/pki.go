// Package pki makes the certificates tfk8s's clusters and tests serve TLS with: a
// self-signed CA and the serving certificates it signs. The caller picks the keys, so
// that each user keeps the key type its reader wants (ECDSA for the control plane, RSA
// for Kueue's certificate rotator, which parses PKCS #1 alone).
package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Names are what a certificate is for: its subject and the names a client checks.
type Names struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
}

// NewCA makes a self-signed CA certificate for key, valid from an hour before now (a
// clock a little behind still accepts it) for validity.
func NewCA(names Names, key crypto.Signer, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	tmpl, err := template(names, now, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate %s: %w", names.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

// IssueServing signs, with the CA, a serving certificate for the public key pub: PEM.
func IssueServing(names Names, pub crypto.PublicKey, ca *x509.Certificate, caKey crypto.Signer, now time.Time, validity time.Duration) ([]byte, error) {
	tmpl, err := template(names, now, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating serving certificate %s: %w", names.CommonName, err)
	}
	return CertPEM(der), nil
}

// CertPEM encodes a certificate's DER as PEM.
func CertPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// template is a certificate for names, valid from an hour before now for validity,
// with a random serial number, so that no two certificates of one CA share one.
func template(names Names, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names.CommonName, Organization: names.Organization},
		DNSNames:     names.DNSNames,
		IPAddresses:  names.IPs,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
	}, nil
}

// IssueClient signs, with the CA, a client certificate for the public key pub: PEM.
// The API server and the kubelet read the user from CommonName and the groups from
// Organization.
func IssueClient(names Names, pub crypto.PublicKey, ca *x509.Certificate, caKey crypto.Signer, now time.Time, validity time.Duration) ([]byte, error) {
	tmpl, err := template(names, now, validity)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating client certificate %s: %w", names.CommonName, err)
	}
	return CertPEM(der), nil
}
