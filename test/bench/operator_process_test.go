package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// Kubeflow's training-operator (bin/training-operator, v1.9.4 built from its Go module)
// as a process of its own, for the side-by-side benchmark.

// What training-operator v1.9.4's main reads, fixed in its code: its webhook's Secret,
// its ValidatingWebhookConfiguration, and where under /tmp its webhook server reads the
// Secret's certificate.
const (
	operatorSecret   = "training-operator-webhook-cert"
	operatorWebhook  = "validator.training-operator.kubeflow.org"
	operatorCertPath = "k8s-webhook-server/serving-certs"
)

// operatorProcess is training-operator running against the control plane.
type operatorProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startOperator runs training-operator's TFJob controller on the cluster of kubeconfig
// (c its client), watching namespace ns alone (so that it leaves the jobs tfk8s ran alone), with args after its flags. Its
// webhook is effectively off, as in test/e2e: its ValidatingWebhookConfiguration has no
// webhooks. Its certificate directory is fixed under /tmp, which test/e2e's migration
// test also writes; so it runs in a mount namespace of its own whose /tmp is a private
// directory, into which the benchmark copies the kubeconfig and, once the operator's
// rotator has written it into the Secret, the certificate.
func startOperator(b *testing.B, c client.Client, kubeconfigPath, ns string, args ...string) *operatorProcess {
	b.Helper()
	ctx := context.Background()
	ensureOperatorObjects(b, c)
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	kubeconfig, err := os.ReadFile(kubeconfigPath)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "kubeconfig"), kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		b.Fatal(err)
	}
	p := &operatorProcess{log: filepath.Join(b.TempDir(), "training-operator.log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	// unshare execs sh, which execs the operator: one process, the benchmark's child.
	p.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /tmp && exec "$@"`, tmp, filepath.Join(bin, "training-operator"),
		"--enable-scheme=tfjob", "--leader-elect=false", "--namespace="+ns,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", fmt.Sprintf("--webhook-server-port=%d", ports[0]))
	p.cmd.Args = append(p.cmd.Args, args...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG=/tmp/kubeconfig", "MY_POD_NAMESPACE=default")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("starting training-operator (make build builds it): %v", err)
	}
	go func() { _ = p.cmd.Wait(); logFile.Close(); close(p.exited) }()
	if err := p.mountCert(ctx, c, filepath.Join(tmp, operatorCertPath)); err != nil {
		p.stop()
		b.Fatalf("training-operator: %v; its log ends:\n%s", err, p.logTail(20))
	}
	return p
}

// ensureOperatorObjects creates the Secret and the empty ValidatingWebhookConfiguration
// training-operator's certificate rotator wants, unless an earlier start made them.
func ensureOperatorObjects(b *testing.B, c client.Client) {
	b.Helper()
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: operatorSecret, Namespace: "default"}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: operatorWebhook}},
	} {
		if err := c.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
}

// mountCert waits, up to a minute, until the rotator has written the certificate into
// the Secret, and writes it into dir, as the kubelet would mount it.
func (p *operatorProcess) mountCert(ctx context.Context, c client.Client, dir string) error {
	var s corev1.Secret
	for range 300 {
		select {
		case <-p.exited:
			return fmt.Errorf("exited before its certificate was written")
		default:
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: operatorSecret}, &s); err != nil {
			return err
		}
		if len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(s.Data["tls.crt"]) == 0 {
		return fmt.Errorf("no certificate in Secret %s within a minute", operatorSecret)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"tls.key", "tls.crt"} { // the key first: the rotator waits for tls.crt
		if err := os.WriteFile(filepath.Join(dir, name), s.Data[name], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// stop sends SIGTERM and waits up to 30 s. v1.9.4 exits with status 2 on SIGTERM, once
// its manager has stopped (its main closes a channel its rotator closed already), so
// its exit status is not an error here.
func (p *operatorProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// logTail is the last n lines of the operator's log.
func (p *operatorProcess) logTail(n int) string {
	data, _ := os.ReadFile(p.log) // a log that cannot be read has no tail
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
