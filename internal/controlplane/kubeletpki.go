package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// KubeletClientPKI are the files through which kube-apiserver authenticates to a
// node's kubelet API (for kubectl logs): a CA the node trusts (its --client-ca-file)
// and the client certificate that CA signs, which kube-apiserver presents.
type KubeletClientPKI struct {
	CACert, CAKey, ClientCert, ClientKey string
}

// KubeletClientPKIIn names the kubelet client PKI files in dir.
func KubeletClientPKIIn(dir string) KubeletClientPKI {
	return KubeletClientPKI{
		CACert:     filepath.Join(dir, "kubelet-client-ca.crt"),
		CAKey:      filepath.Join(dir, "kubelet-client-ca.key"),
		ClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		ClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
}

// APIServerArgs are kube-apiserver's flags that make it present the client
// certificate to kubelets.
func (k KubeletClientPKI) APIServerArgs() []string {
	return []string{"--kubelet-client-certificate=" + k.ClientCert, "--kubelet-client-key=" + k.ClientKey}
}

// KubeletCAArgs make kube-apiserver check the kubelets' serving certificates, so that
// what it forwards to a node (a pod's logs, an exec's stdin) reaches that node alone.
func KubeletCAArgs(opts Options) []string {
	if opts.KubeletCA == "" {
		return nil
	}
	return []string{"--kubelet-certificate-authority=" + opts.KubeletCA}
}

// Ensure writes the CA and the client certificate, valid for validity, unless the four
// files all exist already.
func (k KubeletClientPKI) Ensure(validity time.Duration) error {
	if allExist(k.CACert, k.CAKey, k.ClientCert, k.ClientKey) {
		return nil
	}
	return k.write(time.Now(), validity)
}

// allExist reports whether every path exists.
func allExist(paths ...string) bool {
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			return false
		}
	}
	return true
}

// write generates the CA and the client certificate it signs.
func (k KubeletClientPKI) write(now time.Time, validity time.Duration) error {
	ca, caKey, err := newCA("tfk8s-kubelet-client-ca", now, validity)
	if err != nil {
		return fmt.Errorf("writing the kubelet client CA: %w", err)
	}
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	names := pki.Names{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}
	clientPEM, err := pki.IssueClient(names, clientKey.Public(), ca, caKey, now, validity)
	if err != nil {
		return fmt.Errorf("signing the kubelet client certificate: %w", err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{k.CAKey, pemECKey(caKey)},
		{k.ClientKey, pemECKey(clientKey)},
		{k.CACert, pki.CertPEM(ca.Raw)},
		{k.ClientCert, clientPEM},
	} {
		if err := safewrite.File(f.path, f.data, 0o600); err != nil {
			return fmt.Errorf("writing the kubelet client PKI: %w", err)
		}
	}
	return nil
}
