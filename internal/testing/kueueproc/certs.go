package kueueproc

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
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
	"github.com/tfk8s/tfk8s/internal/pki"
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
// server calls the webhooks. The keys are RSA, and the CA names itself kueue-ca, as
// Kueue's certificate rotator checks before it keeps them.
func NewCerts() (Certs, error) {
	now, validity := time.Now(), 10*365*24*time.Hour
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	ca, err := pki.NewCA(pki.Names{CommonName: "kueue-ca", Organization: []string{"kueue"}, DNSNames: []string{"kueue-ca"}}, caKey, now, validity)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	dnsName := serviceName + "." + Namespace + ".svc"
	names := pki.Names{CommonName: dnsName, DNSNames: []string{dnsName}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	cert, err := pki.IssueServing(names, key.Public(), ca, caKey, now, validity)
	if err != nil {
		return nil, err
	}
	return Certs{
		"ca.crt":  pki.CertPEM(ca.Raw),
		"ca.key":  pemKey(caKey),
		"tls.crt": cert,
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
