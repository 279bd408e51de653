package controlplane

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// EtcdPKI are the files that keep etcd to its API server: etcd serves TLS only and
// serves only clients whose certificate its own CA signed, so that a process on the
// host (or a pod sharing the host's network) that reaches 127.0.0.1 cannot read the
// cluster's Secrets from etcd.
type EtcdPKI struct {
	// CACert signs etcd's serving certificate and every client certificate it accepts.
	CACert, CAKey string
	// ServerCert serves clients and peers (it has both usages: etcd presents it to
	// its peers as a client).
	ServerCert, ServerKey string
	// ClientCert is kube-apiserver's.
	ClientCert, ClientKey string
}

// EtcdPKIIn names the etcd PKI files in dir.
func EtcdPKIIn(dir string) EtcdPKI {
	return EtcdPKI{
		CACert:     filepath.Join(dir, "etcd-ca.crt"),
		CAKey:      filepath.Join(dir, "etcd-ca.key"),
		ServerCert: filepath.Join(dir, "etcd-server.crt"),
		ServerKey:  filepath.Join(dir, "etcd-server.key"),
		ClientCert: filepath.Join(dir, "apiserver-etcd-client.crt"),
		ClientKey:  filepath.Join(dir, "apiserver-etcd-client.key"),
	}
}

// Ensure writes the CA and the certificates, valid for validity, unless every file
// exists already.
func (e EtcdPKI) Ensure(validity time.Duration) error {
	if allExist(e.CACert, e.CAKey, e.ServerCert, e.ServerKey, e.ClientCert, e.ClientKey) {
		return nil
	}
	return e.write(time.Now(), validity)
}

// write generates the CA and the two certificates it signs.
func (e EtcdPKI) write(now time.Time, validity time.Duration) error {
	ca, caKey, err := newCA("tfk8s-etcd-ca", now, validity)
	if err != nil {
		return fmt.Errorf("writing the etcd CA: %w", err)
	}
	files := []pemFile{
		{e.CAKey, pemECKey(caKey)},
		{e.CACert, pki.CertPEM(ca.Raw)},
	}
	for _, leaf := range []struct {
		cert, key string
		names     pki.Names
		issue     func(pki.Names, crypto.PublicKey, *x509.Certificate, crypto.Signer, time.Time, time.Duration) ([]byte, error)
	}{
		// etcd's server certificate also authenticates it to its peers.
		{e.ServerCert, e.ServerKey, pki.Names{CommonName: "etcd", DNSNames: []string{"localhost"},
			IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}, pki.IssuePeer},
		{e.ClientCert, e.ClientKey, pki.Names{CommonName: "kube-apiserver-etcd-client"}, pki.IssueClient},
	} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		certPEM, err := leaf.issue(leaf.names, key.Public(), ca, caKey, now, validity)
		if err != nil {
			return fmt.Errorf("signing the etcd certificate %s: %w", leaf.names.CommonName, err)
		}
		files = append(files, pemFile{leaf.key, pemECKey(key)}, pemFile{leaf.cert, certPEM})
	}
	for _, f := range files {
		if err := safewrite.File(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("writing the etcd PKI: %w", err)
		}
	}
	return nil
}

// pemFile is a PEM file to write.
type pemFile struct {
	path string
	data []byte
}

// etcdArgs are etcd's flags: TLS with client certificates on the client and peer
// ports, and fsync unless durable is false (a test's etcd, thrown away after).
func (e EtcdPKI) etcdArgs(dataDir string, clientPort, peerPort int, durable bool) []string {
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", peerPort)
	args := []string{
		"--name=tfk8s",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=tfk8s=" + peerURL,
		"--cert-file=" + e.ServerCert,
		"--key-file=" + e.ServerKey,
		"--trusted-ca-file=" + e.CACert,
		"--client-cert-auth",
		"--peer-cert-file=" + e.ServerCert,
		"--peer-key-file=" + e.ServerKey,
		"--peer-trusted-ca-file=" + e.CACert,
		"--peer-client-cert-auth",
		"--log-level=warn",
	}
	if !durable {
		args = append(args, "--unsafe-no-fsync")
	}
	return args
}

// apiServerArgs are kube-apiserver's flags that reach etcd with the client certificate.
func (e EtcdPKI) apiServerArgs(clientPort int) []string {
	return []string{
		fmt.Sprintf("--etcd-servers=https://127.0.0.1:%d", clientPort),
		"--etcd-cafile=" + e.CACert,
		"--etcd-certfile=" + e.ClientCert,
		"--etcd-keyfile=" + e.ClientKey,
	}
}

// HTTPClient reaches etcd as kube-apiserver does, with its client certificate.
func (e EtcdPKI) HTTPClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(e.CACert)
	if err != nil {
		return nil, fmt.Errorf("reading the etcd CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in " + e.CACert)
	}
	cert, err := tls.LoadX509KeyPair(e.ClientCert, e.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("reading the etcd client certificate: %w", err)
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		}},
	}, nil
}

// startEtcd starts etcd (or adopts it) and waits until it reports itself healthy to
// a client with the API server's certificate.
func (cp *ControlPlane) startEtcd(ctx context.Context, binDir string, clientPort, peerPort int, durable bool) error {
	etcdPKI := EtcdPKIIn(cp.Dir)
	validity := 24 * time.Hour
	if cp.detach {
		validity = detachedCertValidity
	}
	if err := etcdPKI.Ensure(validity); err != nil {
		return err
	}
	cp.etcd = etcdPKI
	etcd, err := cp.start("etcd", binDir, etcdPKI.etcdArgs(filepath.Join(cp.Dir, "etcd"), clientPort, peerPort, durable))
	if err != nil {
		return err
	}
	cp.logf("etcd %s on https://127.0.0.1:%d (client certificates required)", cp.startedOrRunning(etcd), clientPort)
	hc, err := etcdPKI.HTTPClient()
	if err != nil {
		return err
	}
	return waitHTTP(ctx, etcd, fmt.Sprintf("https://127.0.0.1:%d/health", clientPort), hc)
}
