package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
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
	"github.com/tfk8s/tfk8s/internal/storage"
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

// huntScript searches for a secret's bytes, given XORed with a mask so that its own
// command line does not hold them: in every process's environment and command line,
// and in every file it can read (the first MiB of each; /proc, /sys and /dev left out
// but for those). It prints one line per place found, "found PATH", its own process
// named "self", then "searched N files", and what opening the agent's memory, and
// replacing its binary, gave.
const huntScript = `import os, sys
masked, mask = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
secret = bytes(a ^ b for a, b in zip(masked, mask))
me = str(os.getpid())
searched = 0
def search(path):
    global searched
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)
    except OSError:
        return
    searched += 1
    if secret in data:
        print("found", path.replace("/proc/" + me + "/", "/proc/self/"), flush=True)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("environ", "cmdline"):
            search("/proc/%s/%s" % (pid, name))
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev")]
    for name in files:
        p = os.path.join(root, name)
        if os.path.isfile(p) and not os.path.islink(p):
            search(p)
print("searched", searched, "files", flush=True)
try:
    open("/proc/1/mem", "rb").close()
    print("agent memory: opened", flush=True)
except OSError as e:
    print("agent memory:", e.strerror, flush=True)
try:
    open("/tfk8s/bin/.mine", "wb").close()
    os.replace("/tfk8s/bin/.mine", "/tfk8s/bin/tfk8s-agent")
    print("agent binary: replaced", flush=True)
except OSError as e:
    print("agent binary:", e.strerror, flush=True)
`

// testStorageCredentialsHidden: a job's command that searches its container for the
// storage secret key finds it nowhere, the agent's environment and memory included,
// and cannot replace the agent's binary; with --expose-storage-credentials it finds
// the key in its own environment.
func testStorageCredentialsHidden(ctx context.Context, t *testing.T, c *jobsCluster) {
	s3, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, c.config)
	if err != nil || s3.SecretAccessKey == "" {
		t.Fatalf("reading the secret key from %s: %v", c.config, err)
	}
	secret := []byte(s3.SecretAccessKey)
	mask := make([]byte, len(secret))
	if _, err := rand.Read(mask); err != nil {
		t.Fatal(err)
	}
	masked := make([]byte, len(secret))
	for i := range secret {
		masked[i] = secret[i] ^ mask[i]
	}
	code := t.TempDir()
	if err := os.WriteFile(filepath.Join(code, "hunt.py"), []byte(huntScript), 0o644); err != nil {
		t.Fatal(err)
	}
	hunt := func(t *testing.T, name string, flags ...string) string {
		args := append([]string{"submit", code, "--name", name, "--image", images.Python, "--workers", "0", "--chief"}, flags...)
		c.mustTfk8s(ctx, t, append(args, "--", "python3", "hunt.py", hex.EncodeToString(masked), hex.EncodeToString(mask))...)
		defer c.tfk8s(ctx, "delete", name)
		if job := c.waitFinished(ctx, t, name); job.Status.State != tfv1.JobSucceeded {
			c.fail(t, "%s %s, want Succeeded: %+v", name, job.Status.State, job.Status.Conditions)
		}
		out := c.mustTfk8s(ctx, t, "logs", name).stdout
		t.Logf("what %s found:\n%s", name, out)
		if !strings.Contains(out, "searched ") {
			t.Fatalf("%s did not finish its search:\n%s", name, out)
		}
		return out
	}

	out := hunt(t, "hunt")
	if strings.Contains(out, "found ") {
		t.Errorf("the command found the storage secret key:\n%s", out)
	}
	for _, want := range []string{"agent memory: Permission denied", "agent binary: Read-only file system"} {
		if !strings.Contains(out, want) {
			t.Errorf("the command's search did not say %q:\n%s", want, out)
		}
	}

	out = hunt(t, "hunt-exposed", "--expose-storage-credentials")
	if !strings.Contains(out, "found /proc/self/environ") {
		t.Errorf("with --expose-storage-credentials, the command did not find the secret key in its environment:\n%s", out)
	}
}
