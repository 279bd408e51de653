package kueueproc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// Certs are the files of Kueue's certificate Secret: ca.crt, ca.key, tls.crt, tls.key.
type Certs map[string][]byte

// CA is the certificate of the CA that signed Kueue's serving certificate.
func (c Certs) CA() []byte { return c["ca.crt"] }

// CRDs reads Kueue's CRDs (from bin/kueue-crds, copied from its module) with the
// conversion webhook its install configures, never called: every client, Kueue and
// tfk8s, uses the storage version.
func CRDs(binDir string, caPEM []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	kueue, err := controlplane.ReadCRDs(filepath.Join(binDir, "kueue-crds"))
	if err != nil {
		return nil, fmt.Errorf("reading Kueue's CRDs (make tools copies them into bin/kueue-crds): %w", err)
	}
	for _, crd := range kueue {
		if len(crd.Spec.Versions) > 1 {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						Service:  &apiextensionsv1.ServiceReference{Namespace: Namespace, Name: serviceName, Path: ptr.To("/convert")},
						CABundle: caPEM,
					},
					ConversionReviewVersions: []string{"v1"},
				},
			}
		}
	}
	return kueue, nil
}

// NewCerts makes a CA and a serving certificate for Kueue's webhook Service, as
// the files of Kueue's Secret; the certificate names 127.0.0.1 too, where the API
// server calls the webhooks.
func NewCerts() (Certs, error) {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kueue-ca", Organization: []string{"kueue"}},
		DNSNames:  []string{"kueue-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	dnsName := serviceName + "." + Namespace + ".svc"
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName},
		DNSNames: []string{dnsName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return Certs{
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"ca.key":  pemKey(caKey),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pemKey(key),
	}, nil
}

// storeCerts puts the certificates where Kueue reads them: its Secret, and the
// directory a kubelet would mount the Secret on.
func storeCerts(ctx context.Context, c client.Client, certDir string, certs Certs) error {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, name), certs[name], 0o600); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: secretName}, Data: certs}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", secretName, err)
	}
	return nil
}

// pemKey encodes a key as Kueue's certificate rotator reads it: PKCS #1.
func pemKey(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}
