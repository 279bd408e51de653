// Package trainingoperator runs Kubeflow's training-operator (bin/training-operator,
// v1.9.4 built from its Go module), its TFJob controller alone, as a process on the host
// against a test cluster, as its Deployment would run it: for test/e2e's migration test
// and test/bench's side-by-side benchmarks.
//
// Its webhook is effectively off: the ValidatingWebhookConfiguration its certificate
// rotator insists on has no webhooks, so that what tfk8s admits is what the cluster
// admits. The rotator writes its certificate into a Secret, which Start copies where
// the Deployment's volume would put it, for the webhook server to start. That
// directory is fixed under /tmp in its code, so each operator runs in a mount namespace
// of its own whose /tmp is a private directory.
package trainingoperator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// What training-operator v1.9.4's main reads, fixed in its code: its webhook's Secret
// (in MY_POD_NAMESPACE, default here), its ValidatingWebhookConfiguration, and where
// under /tmp its webhook server reads the Secret's certificate.
const (
	Secret   = "training-operator-webhook-cert"
	Webhook  = "validator.training-operator.kubeflow.org"
	certPath = "k8s-webhook-server/serving-certs"
)

// stopGrace bounds how long Stop waits after SIGTERM before it kills.
const stopGrace = 30 * time.Second

// Options say how to run training-operator.
type Options struct {
	// Binary is bin/training-operator; Kubeconfig, the cluster it runs against.
	Binary, Kubeconfig string
	// Namespace, if set, is the one namespace it watches, leaving the others' jobs alone.
	Namespace string
	// Dir receives its private /tmp and its log.
	Dir string
	// Args go after its own flags.
	Args []string
}

// Process is training-operator running.
type Process struct {
	proc *proc.Process
}

// Start creates the Secret and the empty ValidatingWebhookConfiguration unless an
// earlier start did (through c, a client of the cluster), starts training-operator, and
// waits, up to a minute, for its certificate to copy into its /tmp.
func Start(ctx context.Context, c client.Client, opts Options) (*Process, error) {
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: Secret, Namespace: metav1.NamespaceDefault}},
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: Webhook}},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	tmp := filepath.Join(opts.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	kubeconfig, err := os.ReadFile(opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "kubeconfig"), kubeconfig, 0o600); err != nil {
		return nil, err
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	args := []string{"--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /tmp && exec "$@"`, tmp, opts.Binary,
		"--enable-scheme=tfjob", "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--webhook-server-port=" + strconv.Itoa(ports[0])}
	if opts.Namespace != "" {
		args = append(args, "--namespace="+opts.Namespace)
	}
	// unshare execs sh, which execs the operator: one process, the caller's child.
	p, err := proc.Start("training-operator", "unshare", append(args, opts.Args...), opts.Dir, proc.Options{
		Env: []string{"KUBECONFIG=/tmp/kubeconfig", "MY_POD_NAMESPACE=" + metav1.NamespaceDefault},
	})
	if err != nil {
		return nil, err
	}
	op := &Process{proc: p}
	if err := op.mountCert(ctx, c, filepath.Join(tmp, certPath)); err != nil {
		op.Stop()
		return nil, fmt.Errorf("training-operator: %w; its log ends:\n%s", err, p.LogTail(20))
	}
	return op, nil
}

// mountCert waits, up to a minute, until the rotator has written the certificate into
// the Secret, and writes it into dir, as the kubelet would mount it.
func (p *Process) mountCert(ctx context.Context, c client.Client, dir string) error {
	var s corev1.Secret
	for range 300 {
		if p.proc.Exited() {
			return errors.New("exited before its certificate was written")
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: Secret}, &s); err != nil {
			return err
		}
		if len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(s.Data["tls.crt"]) == 0 {
		return fmt.Errorf("no certificate in Secret %s within a minute", Secret)
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

// Stop sends SIGTERM and waits up to 30 s, then kills. v1.9.4 exits with status 2 on
// SIGTERM once its manager has stopped (its main closes a channel its rotator closed
// already, a panic in its log), so how it exited is Err's to tell, not an error here.
// It returns whether it exited within the grace.
func (p *Process) Stop() (inTime bool) {
	start := time.Now()
	_ = p.proc.Stop(stopGrace)
	return time.Since(start) < stopGrace
}

// Err is how it exited, once stopped.
func (p *Process) Err() error { return p.proc.Err() }

// LogPath is its log.
func (p *Process) LogPath() string { return p.proc.LogPath() }

// LogTail is the last n lines of its log.
func (p *Process) LogTail(n int) string { return p.proc.LogTail(n) }
