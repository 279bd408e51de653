package kueue

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kueue's admission webhooks are installed as its release installs them, from its
// module's config/components/webhook, with one change: the API server calls the kueue
// process on loopback by URL, since no Service routes to a process on the host. Only
// the webhooks of kubeflow.org TFJobs and of Kueue's own objects are kept: the others
// are for kinds this suite does not serve or does not queue (pods, batch Jobs), and
// the pods tfk8s creates must not wait on a webhook that only says yes.

// webhookGroups are the API groups whose webhooks are installed.
var webhookGroups = []string{"kubeflow.org", "kueue.x-k8s.io"}

// kueueModuleDir is the directory of the Kueue module bin/kueue is built from.
func kueueModuleDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kueue")
	cmd.Dir = filepath.Join("..", "..", "..", "hack", "tools", "kueue")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("finding the Kueue module (go list in hack/tools/kueue): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// installKueueWebhooks creates Kueue's mutating and validating webhook configurations
// under the names its certificate manager keeps up to date, calling
// https://127.0.0.1:port.
func installKueueWebhooks(ctx context.Context, c client.Client, port int, caPEM []byte) error {
	dir, err := kueueModuleDir()
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
		return !coversGroups(w.Rules)
	})
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig = url(mutating.Webhooks[i].ClientConfig)
	}
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !coversGroups(w.Rules)
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

// coversGroups reports whether a webhook's rules are about one of webhookGroups.
func coversGroups(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if slices.Contains(webhookGroups, g) {
				return true
			}
		}
	}
	return false
}

// waitKueueReady waits, at most a minute, until Kueue reports ready on its health
// port: its certificates are in place and its webhook server serves.
func waitKueueReady(p *kueueProcess) error {
	deadline := time.Now().Add(time.Minute)
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
		case <-p.done:
			return fmt.Errorf("kueue exited before it was ready; its log is %s", p.logPath)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kueue not ready after a minute: %w", err)
		}
	}
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
