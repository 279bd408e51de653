package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	streamhttp "k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/node"
	"github.com/tfk8s/tfk8s/internal/testing/registryserver"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// The node of the port-forward test, beside the one the other tests share.
const (
	forwardNodeName = "tfk8s-test-node-pf"
	forwardBridge   = "tfk8spf0"
	forwardCIDR     = "10.240.0.0/24"
)

// helloServer answers every GET with a line naming the path. It listens on the pod's
// loopback only: the kubelet forwards to localhost in the pod, and so must the node.
const helloServer = `
import http.server
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from the pod, path " + self.path + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
server = http.server.HTTPServer(("127.0.0.1", 8000), Hello)
print("serving", flush=True)
server.serve_forever()
`

// TestPortForward: a pod of the python image, serving HTTP on its loopback, is reached
// through the API server's pods/portforward as kubectl port-forward reaches it, over
// SPDY and over WebSocket (kubectl's default since 1.31); a port nobody listens on
// ends the client's connection at once with the node's reason.
func TestPortForward(t *testing.T) {
	t.Parallel()
	reg := registryserver.Start(t)
	pushLayout(t, reg, filepath.Join("..", "..", "..", "_out", "images", "python"), "tfk8s/python:3.11")
	startForwardNode(t, reg.Addr)
	ns := testutil.Namespace(t, c)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{corev1.LabelHostname: forwardNodeName},
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name: "main", Image: images.Python, Command: []string{"python3", "-c", helloServer},
			}},
		},
	}
	createPod(t, pod)
	waitPod(t, ns, "hello", 2*time.Minute, "serving", func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
		logs, err := clientset.CoreV1().Pods(ns).GetLogs("hello", &corev1.PodLogOptions{Container: "main"}).DoRaw(context.Background())
		return err == nil && strings.Contains(string(logs), "serving")
	})
	portURL := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("hello").SubResource("portforward").URL()

	for _, transport := range []string{"SPDY", "WebSocket"} {
		t.Run(transport, func(t *testing.T) {
			local, _ := forwardPort(t, podDialer(t, transport, portURL), 8000)
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + local + "/through/" + transport)
			if err != nil {
				t.Fatalf("GET through the forward: %v", err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if want := "hello from the pod, path /through/" + transport + "\n"; string(body) != want {
				t.Errorf("body %q, want %q", body, want)
			}
		})
	}

	t.Run("ClosedPort", func(t *testing.T) {
		reasons := captureForwardErrors(t)
		local, ended := forwardPort(t, podDialer(t, "SPDY", portURL), 8001)
		start := time.Now()
		_, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + local + "/")
		if err == nil || time.Since(start) > 15*time.Second {
			t.Fatalf("GET to a closed port: %v after %v, want an error at once", err, time.Since(start))
		}
		select {
		case err := <-ended:
			if !errors.Is(err, portforward.ErrLostConnectionToPod) {
				t.Errorf("the forward ended with %v, want %v", err, portforward.ErrLostConnectionToPod)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the forward to a closed port still runs 15 s after its connection failed")
		}
		want := fmt.Sprintf("error forwarding port 8001 to pod %s/hello, uid : connecting to port 8001 in the pod: dial tcp 127.0.0.1:8001: connect: connection refused", ns)
		if got := reasons.String(); !strings.Contains(got, want) {
			t.Errorf("client's errors %q, want the node's reason %q", got, want)
		}
		t.Logf("the client was told: %s", reasons)
	})
}

// podDialer opens pods/NAME/portforward over one transport, as client-go does.
func podDialer(t *testing.T, transport string, portURL *url.URL) streamhttp.Dialer {
	t.Helper()
	if transport == "WebSocket" {
		d, err := portforward.NewSPDYOverWebsocketDialerForStreaming(portURL, cp.Config)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	rt, upgrader, err := spdy.RoundTripperFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, portURL)
}

// forwardPort forwards a free local port to port until the test ends; it returns the
// local address and the forward's end.
func forwardPort(t *testing.T, dialer streamhttp.Dialer, port int) (string, <-chan error) {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- pf.ForwardPorts() }()
	t.Cleanup(func() { close(stop) })
	select {
	case <-ready:
	case err := <-ended:
		t.Fatalf("forwarding port %d: %v", port, err)
	case <-time.After(time.Minute):
		t.Fatalf("forwarding port %d: not ready within a minute", port)
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), ended
}

// captureForwardErrors collects what client-go reports of a forward's errors (it
// passes the node's reason to runtime.HandleError) until the test ends.
func captureForwardErrors(t *testing.T) *testutil.SyncBuffer {
	var buf testutil.SyncBuffer
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = append(append([]utilruntime.ErrorHandler{}, saved...),
		func(_ context.Context, err error, _ string, _ ...any) { fmt.Fprintln(&buf, err) })
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return &buf
}

// pushLayout pushes the image of an OCI layout that tfk8s's image builds write
// (_out/images/NAME) to the registry.
func pushLayout(t *testing.T, reg *registryserver.Server, dir, repoAndTag string) {
	t.Helper()
	inner := registryserver.BuiltIndex(t, dir)
	reg.Push(t, inner, repoAndTag)
}

// startForwardNode runs the test's node, pulling ghcr.io's images from mirror.
func startForwardNode(t *testing.T, mirror string) {
	t.Helper()
	startExtraNode(t, node.Options{
		NodeName: forwardNodeName, PodCIDR: forwardCIDR, Bridge: forwardBridge,
		RestartBackoff: testBackoff, ShutdownGracePeriod: 5 * time.Second,
		RegistryMirrors: map[string]string{"ghcr.io": "http://" + mirror},
	})
}

// startExtraNode runs a node beside the one the tests share, until the test ends,
// with opts completed by a fresh state directory (and image directory in it), the
// control plane's config and a log file; at the end it checks that the node left
// nothing behind. It returns the state directory.
func startExtraNode(t *testing.T, opts node.Options) string {
	t.Helper()
	state, err := os.MkdirTemp("/var/lib", "tfk8s-node-test-"+opts.NodeName+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Cleanup(func() {
		_ = clientset.CoreV1().Nodes().Delete(context.Background(), opts.NodeName, metav1.DeleteOptions{})
	})
	opts.Config, opts.StateDir, opts.Log = cp.Config, state, zap.New(zap.WriteTo(nodeLog2(t)))
	if opts.ImageDir == "" && len(opts.RegistryMirrors) > 0 {
		opts.ImageDir = filepath.Join(state, "images")
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx, opts) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("node %s: %v", opts.NodeName, err)
			}
		case <-time.After(time.Minute):
			t.Errorf("node %s did not stop within a minute", opts.NodeName)
		}
		if left := leftovers(state, opts.Bridge, nil); len(left) > 0 {
			t.Errorf("node %s left behind: %v", opts.NodeName, left)
		}
	})
	if err := waitNodeReady(ctx, opts.NodeName, done); err != nil {
		t.Fatal(err)
	}
	return state
}
