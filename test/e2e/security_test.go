package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
)

// snoopScript tries to read each path given as an argument, as a curious (or hostile)
// training program would, and says for each whether it read anything.
const snoopScript = `import os, sys
for p in sys.argv[1:]:
    try:
        got = os.listdir(p) if os.path.isdir(p) else open(p, "rb").read()
    except OSError as e:
        got = None
    print(("READ " if got else "hidden ") + p, flush=True)
`

// testSecretsHidden: a job's command that tries to read the cluster's admin
// kubeconfig, its CA, service-account and etcd keys and its S3 settings, by their
// paths on the host, reads nothing. (The host's /etc/shadow is no target: a
// container's /etc is its image's.)
func testSecretsHidden(ctx context.Context, t *testing.T, c *jobsCluster) {
	targets := []string{
		filepath.Join(c.dir, "kubeconfig"),
		filepath.Join(c.dir, "s3.yaml"),
		filepath.Join(c.dir, "cluster", "ca.key"),
		filepath.Join(c.dir, "cluster", "sa.key"),
		filepath.Join(c.dir, "cluster", "etcd-ca.key"),
		filepath.Join(c.dir, "cluster"),
	}
	for _, p := range targets {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the host has no %s to hide: %v", p, err)
		}
	}
	c.mustTfk8s(ctx, t, append([]string{"submit", "--name", "snoop", "--image", images.Python, "--workers", "0", "--chief",
		"--", "python3", "-c", snoopScript}, targets...)...)
	defer c.tfk8s(ctx, "delete", "snoop")
	if job := c.waitFinished(ctx, t, "snoop"); job.Status.State != tfv1.JobSucceeded {
		c.fail(t, "snoop %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	out := c.mustTfk8s(ctx, t, "logs", "snoop").stdout
	t.Logf("what the job read:\n%s", out)
	for _, p := range targets {
		if !strings.Contains(out, "hidden "+p) {
			t.Errorf("the job read %s (or did not say): log\n%s", p, out)
		}
	}
}

// testEtcdRefusesStrangers: etcd answers a client with the API server's certificate,
// and refuses one without: plain HTTP, and TLS that trusts etcd but presents nothing.
func testEtcdRefusesStrangers(t *testing.T, dir string, port int) {
	pki := controlplane.EtcdPKIIn(filepath.Join(dir, "cluster"))
	url := fmt.Sprintf("https://127.0.0.1:%d/v3/kv/range", port)
	body := `{"key": "L3JlZ2lzdHJ5L3NlY3JldHM=", "range_end": "L3JlZ2lzdHJ5L3NlY3JldHQ=", "keys_only": true}` // /registry/secrets
	admitted, err := pki.HTTPClient()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := admitted.Post(url, "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd with the API server's certificate: %v %v", resp, err)
	}
	resp.Body.Close()
	caPEM, err := os.ReadFile(pki.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	strangers := map[string]*http.Client{
		"TLS without a client certificate": {Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
		"plain HTTP":                       {Timeout: 5 * time.Second},
	}
	for name, hc := range strangers {
		u := url
		if name == "plain HTTP" {
			u = strings.Replace(url, "https://", "http://", 1)
		}
		resp, err := hc.Post(u, "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("etcd answered a client with %s: %s", name, resp.Status)
				continue
			}
		}
		t.Logf("etcd refused a client with %s: %v", name, errOrStatus(err, resp))
	}
}

func errOrStatus(err error, resp *http.Response) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}
