package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestForwardToPodRefusesBadLocalAddress: the local address is checked before any
// request, with an error naming it.
func TestForwardToPodRefusesBadLocalAddress(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1", `local address "127.0.0.1": address 127.0.0.1: missing port in address`},
		{"127.0.0.1:http", `local address "127.0.0.1:http": port "http" is not a number from 0 to 65535`},
		{"127.0.0.1:70000", `local address "127.0.0.1:70000": port "70000" is not a number from 0 to 65535`},
	} {
		_, err := ToPod(context.Background(), &rest.Config{Host: "https://127.0.0.1:1"}, "ns", "pod", 6006, tc.addr, os.Stderr)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ToPod(%q): %v, want %q", tc.addr, err, tc.want)
		}
	}
}

// refusingPod is a pod's port as the node serves it: it refuses connections while
// refuse is set (a TensorBoard restarting), else connects to addr.
type refusingPod struct {
	addr   string
	refuse *atomic.Bool
}

func (p refusingPod) PortForward(ctx context.Context, _, _ string, _ int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	if p.refuse.Load() {
		return errors.New("connection refused")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() { _, _ = io.Copy(conn, stream) }()
	_, err = io.Copy(stream, conn)
	return err
}

// TestStartForwardSurvivesARefusedConnection: client-go drops a whole forward when one
// connection is refused; Start forwards again on the same local port, so a
// browser that reloads while TensorBoard restarts keeps its URL. The server speaks SPDY
// only, as API servers before 1.31 did: the WebSocket dial falls back to it.
func TestStartForwardSurvivesARefusedConnection(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "tensorboard") }))
	defer backend.Close()
	var refuse atomic.Bool
	refuse.Store(true)
	pod := refusingPod{addr: backend.Listener.Addr().String(), refuse: &refuse}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wsstream.IsWebSocketRequest(r) {
			http.Error(w, "no WebSocket here", http.StatusBadRequest)
			return
		}
		portforward.ServePortForward(w, r, pod, "ns/tb", "", &portforward.V4Options{}, time.Minute, 10*time.Second, portforward.SupportedProtocols)
	}))
	defer api.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut testutil.SyncBuffer
	addr, done, err := Start(ctx, &rest.Config{Host: api.URL}, "ns", "tb", 6006, "127.0.0.1:0", &errOut)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	if _, err := client.Get("http://" + addr.String() + "/"); err == nil {
		t.Fatal("GET while the pod refuses: no error")
	}
	refuse.Store(false)
	testutil.Eventually(t, "the forward to answer on "+addr.String()+" again", func(context.Context) (bool, error) {
		resp, err := client.Get("http://" + addr.String() + "/")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body) == "tensorboard", err
	})
	if want := "Forwarding to pod ns/tb stopped (lost connection to pod); forwarding again"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the forward ended with %v after ctx, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the forward still runs 10 s after its context ended")
	}
}
