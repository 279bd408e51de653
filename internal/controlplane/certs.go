package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// serviceCIDR is the Services' ClusterIP range; KubernetesServiceIP, its first
// address, is the kubernetes Service's, which the API server's certificate names.
const (
	serviceCIDR         = "10.96.0.0/16"
	KubernetesServiceIP = "10.96.0.1"
)

// credentials are the files a control plane needs to serve TLS, sign service-account
// tokens and authenticate its admin.
type credentials struct {
	caCert      string // PEM CA certificate: signs the serving certificate
	caKey       string
	servingCert string // kube-apiserver's serving certificate, for servingIPs and localhost
	servingKey  string
	saKey       string // RSA key signing service-account tokens
	saPub       string
	tokenFile   string // static token file: the admin token, in group system:masters
	adminToken  string
	caCertPEM   []byte
	servingIPs  []net.IP // 127.0.0.1, and Options.Address if set
}

// writeCredentials generates a fresh CA, serving certificate (for address too, when
// set), service-account key pair and admin token under dir, the certificates valid
// for a day: a test's lifetime.
func writeCredentials(dir, address string) (*credentials, error) {
	return writeCredentialsValidFor(dir, address, 24*time.Hour)
}

// writeCredentialsValidFor is writeCredentials with certificates valid for validity.
func writeCredentialsValidFor(dir, address string, validity time.Duration) (*credentials, error) {
	c := credentialPaths(dir, address)
	now := time.Now()
	caCert, caKey, err := newCA("tfk8s-test-ca", now, validity)
	if err != nil {
		return nil, err
	}
	c.caCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw})

	srvCertPEM, srvKeyPEM, err := servingCertificate(c.servingIPs, caCert, caKey, now, validity)
	if err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}

	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	c.adminToken = fmt.Sprintf("%x", token)

	files := []struct {
		path string
		data []byte
	}{
		{c.caCert, c.caCertPEM},
		{c.caKey, pemECKey(caKey)},
		{c.servingCert, srvCertPEM},
		{c.servingKey, srvKeyPEM},
		{c.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{c.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub})},
		{c.tokenFile, fmt.Appendf(nil, "%s,admin,admin,system:masters\n", c.adminToken)},
	}
	for _, f := range files {
		if err := safewrite.File(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// servingCertificate issues kube-apiserver's serving certificate and key, PEM, for
// hostIPs and the names clients reach it by.
func servingCertificate(hostIPs []net.IP, caCert *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	names := pki.Names{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		// Pods reach the API server at the kubernetes Service's ClusterIP, and check
		// that the certificate names it, as client-go's in-cluster configuration does.
		IPs: append(slices.Clone(hostIPs), net.IPv6loopback, net.ParseIP(KubernetesServiceIP)),
	}
	certPEM, err = pki.IssueServing(names, srvKey.Public(), caCert, caKey, now, validity)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, pemECKey(srvKey), nil
}

// reissueServingCert replaces the serving certificate and key in c's files with new
// ones from the CA there.
func reissueServingCert(c *credentials, validity time.Duration) error {
	caCert, caKey, err := loadCA(c)
	if err != nil {
		return fmt.Errorf("reissuing the serving certificate: %w", err)
	}
	certOut, keyOut, err := servingCertificate(c.servingIPs, caCert, caKey, time.Now(), validity)
	if err != nil {
		return err
	}
	// The key first: a kube-apiserver reloading between the two writes sees a pair
	// that does not match and keeps the old one until the certificate follows.
	if err := safewrite.File(c.servingKey, keyOut, 0o600); err != nil {
		return err
	}
	return safewrite.File(c.servingCert, certOut, 0o600)
}

// loadCA reads the cluster's CA certificate and key.
func loadCA(c *credentials) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	caPEM, err := os.ReadFile(c.caCert)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(c.caKey)
	if err != nil {
		return nil, nil, err
	}
	certBlock, _ := pem.Decode(caPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, fmt.Errorf("no PEM in %s or %s", c.caCert, c.caKey)
	}
	caCert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", c.caCert, err)
	}
	caKey, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", c.caKey, err)
	}
	return caCert, caKey, nil
}

// newCA generates a self-signed CA, valid from an hour before now for validity.
func newCA(commonName string, now time.Time, validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	cert, err := pki.NewCA(pki.Names{CommonName: commonName}, key, now, validity)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// credentialPaths names the credential files under dir, of a kube-apiserver that also
// serves on address when it is set.
func credentialPaths(dir, address string) *credentials {
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	if ip := net.ParseIP(address); ip != nil && !ip.IsLoopback() {
		ips = append(ips, ip)
	}
	return &credentials{
		caCert:      filepath.Join(dir, "ca.crt"),
		caKey:       filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey:  filepath.Join(dir, "apiserver.key"),
		saKey:       filepath.Join(dir, "sa.key"),
		saPub:       filepath.Join(dir, "sa.pub"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
		servingIPs:  ips,
	}
}

func pemECKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		// A freshly generated P-256 key always marshals.
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
