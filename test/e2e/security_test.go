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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/node"
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
// kubeconfig, its CA, service-account and etcd keys, its S3 settings and the host's
// password hashes reads nothing, though its root is the host's file system.
func testSecretsHidden(ctx context.Context, t *testing.T, c *jobsCluster) {
	targets := []string{
		filepath.Join(c.dir, "kubeconfig"),
		filepath.Join(c.dir, "s3.yaml"),
		filepath.Join(c.dir, "cluster", "ca.key"),
		filepath.Join(c.dir, "cluster", "sa.key"),
		filepath.Join(c.dir, "cluster", "etcd-ca.key"),
		filepath.Join(c.dir, "cluster"),
		"/etc/shadow",
	}
	for _, p := range targets {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the host has no %s to hide: %v", p, err)
		}
	}
	c.mustTfk8s(ctx, t, append([]string{"submit", "--name", "snoop", "--image", hostImage, "--workers", "0", "--chief",
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

// testHostPathRefused: a pod mounting the host's /etc is refused by the API server in
// a namespace under Pod Security baseline (every user namespace), and, in a namespace
// labelled privileged, by the node, which allows no host path by default: the pod
// fails with reason HostPathNotAllowed and a Warning event.
func testHostPathRefused(ctx context.Context, t *testing.T, c *jobsCluster) {
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hostetc", Namespace: ns},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "cat", Image: images.Python, Command: []string{"cat", "/host/shadow"},
					VolumeMounts: []corev1.VolumeMount{{Name: "etc", MountPath: "/host"}}}},
				Volumes: []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc"}}}},
			},
		}
	}
	_, err := c.cs.CoreV1().Pods("default").Create(ctx, pod("default"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hostPath") {
		t.Errorf("creating a hostPath pod in default: %v, want Forbidden by Pod Security naming hostPath", err)
	}
	const ns = "e2e-privileged"
	_, err = c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	c.eventually(ctx, t, "a hostPath pod in "+ns+" created", func() (bool, error) {
		_, err := c.cs.CoreV1().Pods(ns).Create(ctx, pod(ns), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err // the ServiceAccount may lag
	})
	var got *corev1.Pod
	c.eventually(ctx, t, "the hostPath pod failed by the node", func() (bool, error) {
		p, err := c.cs.CoreV1().Pods(ns).Get(ctx, "hostetc", metav1.GetOptions{})
		got = p
		return err == nil && p.Status.Phase == corev1.PodFailed, err
	})
	t.Logf("pod status: %s: %s", got.Status.Reason, got.Status.Message)
	if got.Status.Reason != node.ReasonHostPathNotAllowed || !strings.Contains(got.Status.Message, "hostPath /etc") {
		t.Errorf("pod failed with %s: %q, want %s naming hostPath /etc", got.Status.Reason, got.Status.Message, node.ReasonHostPathNotAllowed)
	}
	c.eventually(ctx, t, "a HostPathNotAllowed event", func() (bool, error) {
		events, err := c.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=hostetc"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == node.ReasonHostPathNotAllowed && e.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})
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
