package node_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// whoAmIScript does what client-go's in-cluster configuration does: the API server at
// KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT over TLS checked against the
// service account's ca.crt (kube-root-ca.crt), authenticated by its projected token.
// It asks the API server who it is (a SelfSubjectReview) and prints the answer.
const whoAmIScript = `
import json, os, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
print("service", host + ":" + port, flush=True)
ctx = ssl.create_default_context(cafile=sa + "ca.crt")
req = urllib.request.Request("https://%s:%s/apis/authentication.k8s.io/v1/selfsubjectreviews" % (host, port),
    data=json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode(),
    headers={"Authorization": "Bearer " + open(sa + "token").read(), "Content-Type": "application/json"})
with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
    print("user", json.load(resp)["status"]["userInfo"]["username"], flush=True)
`

// TestPodsReachTheAPIServer: a pod's in-cluster client reaches the API server through
// the kubernetes Service (10.96.0.1:443, which the node serves without kube-proxy),
// trusts its certificate through the cluster's CA and is its service account; a
// host-network pod reaches it too, at the API server's own address.
func TestPodsReachTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := testutil.Namespace(t, c)
	for _, tc := range []struct {
		name        string
		hostNetwork bool
		service     string
	}{
		{name: "pod-network", service: controlplane.KubernetesServiceIP + ":443"},
		{name: "host-network", hostNetwork: true, service: strings.TrimPrefix(cp.Config.Host, "https://")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := shPod(tc.name, ns, "")
			pod.Spec.HostNetwork = tc.hostNetwork
			pod.Spec.Containers[0].Command = []string{"python3", "-c", whoAmIScript}
			createPod(t, pod)
			p := waitPod(t, ns, tc.name, 30*time.Second, "finished", func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			got := podLogs(t, ns, tc.name, &corev1.PodLogOptions{})
			want := "service " + tc.service + "\nuser system:serviceaccount:" + ns + ":default\n"
			if p.Status.Phase != corev1.PodSucceeded || got != want {
				t.Errorf("pod %s printed:\n%s\nwant:\n%s", p.Status.Phase, got, want)
			}
		})
	}
}
