package kueue

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
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/testing/procstop"
)

// Kueue runs as its install runs it: in namespace kueue-system with its internal
// certificate management: the certificates are made here, as a previous run of Kueue
// would have left them in its Secret (and the kubelet in the Secret's volume), so that
// Kueue starts without waiting on a volume that no kubelet mounts. No webhook
// Kueue's webhooks are installed (kueue_webhooks_test.go) for its built-in
// kubeflow.org/tfjob integration; tfk8s.io TFJobs, an external framework, have their
// Workloads made by tfk8s.
const (
	kueueNamespace = "kueue-system"
	kueueSecret    = "kueue-webhook-server-cert"
	kueueService   = "kueue-webhook-service"
)

// kueueProcess is bin/kueue running against the test control plane.
type kueueProcess struct {
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string
	// healthPort serves /readyz; webhookPort, Kueue's admission webhooks.
	healthPort, webhookPort int
}

// startKueue starts bin/kueue with tfk8s's TFJob as an external framework and Kubeflow's
// as a built-in one, its certificates in its Secret and in dir.
func startKueue(ctx context.Context, cp *controlplane.ControlPlane, c client.Client, binDir, dir string, certs map[string][]byte) (*kueueProcess, error) {
	certDir := filepath.Join(dir, "certs")
	if err := storeKueueCerts(ctx, c, certDir, certs); err != nil {
		return nil, fmt.Errorf("storing Kueue's certificates: %w", err)
	}
	ports, err := proc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(dir, "kueue.yaml")
	if err := os.WriteFile(config, []byte(kueueConfig(ports, certDir)), 0o644); err != nil {
		return nil, err
	}
	p := &kueueProcess{done: make(chan struct{}), logPath: filepath.Join(dir, "kueue.log"), healthPort: ports[0], webhookPort: ports[2]}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(filepath.Join(binDir, "kueue"), "--config", config, "--kubeconfig", cp.Kubeconfig(), "--zap-log-level=3")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kueue: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// kueueConfig is Kueue's Configuration: tfk8s.io TFJobs as an external framework,
// kubeflow.org ones through Kueue's own integration, no leader
// election, its ports free ones on loopback, no visibility API server.
func kueueConfig(ports []int, certDir string) string {
	return fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %s
  webhookSecretName: %s
featureGates:
  VisibilityOnDemand: false
integrations:
  frameworks: ["batch/job", "kubeflow.org/tfjob"]
  externalFrameworks: ["TFJob.v1alpha1.tfk8s.io"]
`, kueueNamespace, ports[0], ports[1], ports[2], certDir, kueueService, kueueSecret)
}

// stop stops Kueue: SIGTERM, then SIGKILL after 10 s.
func (p *kueueProcess) stop() {
	procstop.Group(p.cmd.Process.Pid, p.done, 10*time.Second)
}

// logTail is the end of Kueue's log, to print when a test fails.
func (p *kueueProcess) logTail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// kueueCRDs reads Kueue's CRDs (from bin/kueue-crds, copied from its module) with the
// conversion webhook its install configures, never called: every client, Kueue and
// tfk8s, uses the storage version.
func kueueCRDs(binDir string, caPEM []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
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
						Service:  &apiextensionsv1.ServiceReference{Namespace: kueueNamespace, Name: kueueService, Path: ptr.To("/convert")},
						CABundle: caPEM,
					},
					ConversionReviewVersions: []string{"v1"},
				},
			}
		}
	}
	return kueue, nil
}

// newKueueCerts makes a CA and a serving certificate for Kueue's webhook Service, as
// the files of Kueue's Secret; the certificate names 127.0.0.1 too, where the API
// server calls the webhooks.
func newKueueCerts() (map[string][]byte, error) {
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
	dnsName := kueueService + "." + kueueNamespace + ".svc"
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
	return map[string][]byte{
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"ca.key":  pemKey(caKey),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pemKey(key),
	}, nil
}

// storeKueueCerts puts the certificates where Kueue reads them: its Secret, and the
// directory a kubelet would mount the Secret on.
func storeKueueCerts(ctx context.Context, c client.Client, certDir string, certs map[string][]byte) error {
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, name), certs[name], 0o600); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", kueueNamespace, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueNamespace, Name: kueueSecret}, Data: certs}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating Secret %s: %w", kueueSecret, err)
	}
	return nil
}

// pemKey encodes a key as Kueue's certificate rotator reads it: PKCS #1.
func pemKey(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}
