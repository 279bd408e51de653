package kueueproc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
)

// Kueue's admission webhooks are installed as its release installs them, from its
// module's config/components/webhook, with one change: the API server calls the kueue
// process on loopback by URL, since no Service routes to a process on the host. Only
// the webhooks of the API groups asked for are kept: the others are for kinds a test
// does not queue (pods, batch Jobs), and the pods tfk8s creates must not wait on a
// webhook that only says yes.

// moduleDir is the directory of the Kueue module bin/kueue is built from.
func moduleDir() (string, error) {
	root, err := controlplane.SourceRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = filepath.Join(root, "hack", "tools", "kueue")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the Kueue module (go list in hack/tools/kueue): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ServeWebhooks waits until Kueue serves its webhooks, checks that they answer as the
// API server will call them, then installs those of the API groups given.
func (p *Process) ServeWebhooks(ctx context.Context, c client.Client, caPEM []byte, groups ...string) error {
	if err := p.WaitReady(); err != nil {
		return err
	}
	if err := webhookServes(p.WebhookPort, caPEM); err != nil {
		return err
	}
	return installWebhooks(ctx, c, p.WebhookPort, caPEM, groups)
}

// installWebhooks creates Kueue's mutating and validating webhook configurations under
// the names its certificate manager keeps up to date, calling https://127.0.0.1:port.
func installWebhooks(ctx context.Context, c client.Client, port int, caPEM []byte, groups []string) error {
	dir, err := moduleDir()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "config", "components", "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	url := func(cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{
			URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, *cc.Service.Path)), CABundle: caPEM,
		}
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := dec.Decode(mutating); err != nil {
		return fmt.Errorf("reading Kueue's mutating webhooks: %w", err)
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := dec.Decode(validating); err != nil {
		return fmt.Errorf("reading Kueue's validating webhooks: %w", err)
	}
	mutating.Name, validating.Name = "kueue-mutating-webhook-configuration", "kueue-validating-webhook-configuration"
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return !coversGroups(w.Rules, groups)
	})
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig = url(mutating.Webhooks[i].ClientConfig)
	}
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !coversGroups(w.Rules, groups)
	})
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig = url(validating.Webhooks[i].ClientConfig)
	}
	if err := c.Create(ctx, mutating); err != nil {
		return fmt.Errorf("creating Kueue's mutating webhooks: %w", err)
	}
	if err := c.Create(ctx, validating); err != nil {
		return fmt.Errorf("creating Kueue's validating webhooks: %w", err)
	}
	return nil
}

// coversGroups reports whether a webhook's rules are about one of groups.
func coversGroups(rules []admissionregistrationv1.RuleWithOperations, groups []string) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if slices.Contains(groups, g) {
				return true
			}
		}
	}
	return false
}

// webhookServes reports whether Kueue's webhook server answers TLS on loopback with a
// certificate the CA signed for 127.0.0.1, as the API server will check it.
func webhookServes(port int, caPEM []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return fmt.Errorf("calling Kueue's webhook server as the API server does: %w", err)
	}
	return conn.Close()
}
