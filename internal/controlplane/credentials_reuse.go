package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// detachedCertValidity is how long a detached control plane's certificates last: a
// local cluster is kept for as long as its user wants it.
const detachedCertValidity = 10 * 365 * 24 * time.Hour

// loadOrWriteCredentials reuses the credentials in dir when they are all there and the
// serving certificate is still valid for a day, else writes fresh ones.
func loadOrWriteCredentials(dir, address string) (*credentials, error) {
	c := credentialPaths(dir, address)
	for _, path := range []string{c.caCert, c.caKey, c.servingCert, c.servingKey, c.saKey, c.saPub, c.tokenFile} {
		if _, err := os.Stat(path); err != nil {
			return writeCredentialsValidFor(dir, address, detachedCertValidity)
		}
	}
	serving, err := os.ReadFile(c.servingCert)
	if err != nil {
		return nil, err
	}
	if block, _ := pem.Decode(serving); block == nil {
		return nil, fmt.Errorf("no certificate in %s", c.servingCert)
	} else if cert, err := x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", c.servingCert, err)
	} else if time.Until(cert.NotAfter) < 24*time.Hour {
		return writeCredentialsValidFor(dir, address, detachedCertValidity)
	} else if !namesEvery(cert, append(slices.Clone(c.servingIPs), net.ParseIP(KubernetesServiceIP))) {
		// Made before pods reached the API server through the kubernetes Service, or
		// for another address: a new one from the same CA, which a running
		// kube-apiserver reloads.
		if err := reissueServingCert(c, detachedCertValidity); err != nil {
			return nil, err
		}
	}
	if c.caCertPEM, err = os.ReadFile(c.caCert); err != nil {
		return nil, err
	}
	tokens, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return nil, err
	}
	token, _, _ := strings.Cut(string(tokens), ",")
	if token == "" {
		return nil, fmt.Errorf("no admin token in %s", c.tokenFile)
	}
	c.adminToken = token
	return c, nil
}

// namesEvery reports whether cert names every one of ips.
func namesEvery(cert *x509.Certificate, ips []net.IP) bool {
	for _, ip := range ips {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}
