// Package kueueproc runs Kueue, built from its module into bin/kueue, as a process
// against a test control plane or a local cluster, as Kueue's release runs it: in
// namespace kueue-system with its internal certificate management, its CRDs from its
// module, and, when asked, its own admission webhooks called on loopback.
package kueueproc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// Names of Kueue's install. The certificates are made by the caller (NewCerts) and
// stored as a previous run of Kueue would have left them, in its Secret and in the
// directory the kubelet would mount it on, so that Kueue starts without waiting on a
// volume no kubelet mounts: Kueue runs on the host.
const (
	Namespace     = "kueue-system"
	secretName    = "kueue-webhook-server-cert"
	serviceName   = "kueue-webhook-service"
	readyTimeout  = time.Minute
	stopGraceTime = 10 * time.Second
)

// Options says how to run Kueue.
type Options struct {
	// BinDir holds kueue; Dir receives its configuration, certificates and log.
	BinDir, Dir string
	// Kubeconfig is the cluster Kueue runs against.
	Kubeconfig string
	// Frameworks are Kueue's built-in integrations to enable; ExternalFrameworks, the
	// kinds whose Workloads another controller makes (tfk8s for its TFJob).
	Frameworks, ExternalFrameworks []string
}

// Process is bin/kueue running.
type Process struct {
	proc *proc.Process
	// LogPath is Kueue's log.
	LogPath string
	// WebhookPort serves Kueue's admission webhooks on 127.0.0.1.
	WebhookPort int
	healthPort  int
}

// Start stores Kueue's certificates in its Secret (through c, a client of the same
// cluster) and in Dir, then starts bin/kueue.
func Start(ctx context.Context, c client.Client, opts Options, certs Certs) (*Process, error) {
	certDir := filepath.Join(opts.Dir, "certs")
	if err := storeCerts(ctx, c, certDir, certs); err != nil {
		return nil, fmt.Errorf("storing Kueue's certificates: %w", err)
	}
	ports, err := proc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(opts.Dir, "kueue.yaml")
	if err := os.WriteFile(config, []byte(configuration(opts, ports, certDir)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"--config", config, "--kubeconfig", opts.Kubeconfig, "--zap-log-level=3"}
	kp, err := proc.Start("kueue", filepath.Join(opts.BinDir, "kueue"), args, opts.Dir, proc.Options{OwnGroup: true})
	if err != nil {
		return nil, err
	}
	return &Process{proc: kp, LogPath: kp.LogPath(), healthPort: ports[0], WebhookPort: ports[2]}, nil
}

// configuration is Kueue's Configuration: the frameworks asked for, no leader
// election, its ports free ones on loopback, no visibility API server.
func configuration(opts Options, ports []int, certDir string) string {
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
  frameworks: %s
  externalFrameworks: %s
`, Namespace, ports[0], ports[1], ports[2], certDir, serviceName, secretName, yamlList(opts.Frameworks), yamlList(opts.ExternalFrameworks))
}

// yamlList writes names as a YAML flow sequence.
func yamlList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// WaitReady waits, at most a minute, until Kueue reports ready on its health port:
// its certificates are in place and its webhook server serves.
func (p *Process) WaitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.healthPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz answered %s", resp.Status)
		}
		select {
		case <-p.proc.Done():
			return fmt.Errorf("kueue exited before it was ready; its log is %s", p.LogPath)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kueue not ready after %v: %w", readyTimeout, err)
		}
	}
}

// Stop stops Kueue: SIGTERM, then SIGKILL after 10 s.
func (p *Process) Stop() {
	_ = p.proc.Stop(stopGraceTime)
}

// LogTail is the end of Kueue's log, to print when a test fails.
func (p *Process) LogTail(lines int) string { return p.proc.LogTail(lines) }
