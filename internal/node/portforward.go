package node

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/vishvananda/netns"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

const (
	// portForwardIdleTimeout ends a forward nobody used for this long: the kubelet's
	// default streamingConnectionIdleTimeout.
	portForwardIdleTimeout = 4 * time.Hour
	// portForwardStreamTimeout bounds the wait for the second stream of a pair, as the
	// kubelet's streaming server does.
	portForwardStreamTimeout = 30 * time.Second
	// portDialTimeout bounds a connection to a pod's port: a closed port is refused
	// at once, a dropped one must not hang the client.
	portDialTimeout = 10 * time.Second
)

// registerPortForward serves the kubelet's port-forward endpoints, which the API server
// proxies `kubectl port-forward` to (pods/portforward): SPDY, or WebSocket when a client
// reaches the node directly; the API server itself tunnels WebSocket clients over SPDY.
func (s *kubeletServer) registerPortForward(mux *http.ServeMux) {
	for _, path := range []string{"/portForward/{namespace}/{pod}", "/portForward/{namespace}/{pod}/{uid}"} {
		mux.HandleFunc("GET "+path, s.portForward)
		mux.HandleFunc("POST "+path, s.portForward)
	}
}

// portForward upgrades the request and forwards each of its streams to a port of the
// pod, until the client goes or the pod stops.
func (s *kubeletServer) portForward(w http.ResponseWriter, r *http.Request) {
	ns, podName, uid := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid")
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	worker := s.m.worker(ns, podName)
	if worker == nil || (uid != "" && string(worker.uid) != uid) {
		http.Error(w, fmt.Sprintf("pod %s/%s not found on this node", ns, podName), http.StatusNotFound)
		return
	}
	s.m.log.V(2).Info("Forwarding ports", "pod", ns+"/"+podName, "ports", opts.Ports)
	portforward.ServePortForward(w, r, podPorts{w: worker}, ns+"/"+podName, uid, opts,
		portForwardIdleTimeout, portForwardStreamTimeout, portforward.SupportedProtocols)
}

// podPorts connects forwarded streams to one pod's ports.
type podPorts struct{ w *podWorker }

// PortForward copies between stream and port on the pod's loopback, as the kubelet's
// runtimes do: a server that listens on localhost only is reached too. The copy ends
// when either side closes, or when the pod stops.
func (p podPorts) PortForward(_ context.Context, name, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	sb := p.w.sandboxInfo()
	if !sb.ready {
		return fmt.Errorf("pod %s has no network yet", name)
	}
	ctx, cancel := context.WithCancel(p.w.m.ctx)
	defer cancel()
	go func() {
		select {
		case <-p.w.stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := dialInNetns(ctx, sb.netnsPath, port)
	if err != nil {
		return err
	}
	defer conn.Close()
	return copyBothWays(ctx, conn, stream)
}

// copyBothWays copies between a pod's connection and a client's stream. The client's
// end of input half-closes the connection, so that the server sees EOF and still
// answers; the server's end ends the forward.
func copyBothWays(ctx context.Context, conn net.Conn, stream io.ReadWriter) error {
	go func() {
		_, err := io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok && err == nil {
			_ = tc.CloseWrite()
			return
		}
		_ = conn.Close()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("copying from the pod: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the pod is stopping")
	}
}

// dialInNetns connects to port on localhost in the network namespace at path ("" is
// the host's, for a host-network pod). The socket is created on a thread moved into
// the namespace and stays there; a thread that cannot be moved back stays locked, and
// Go retires it when the goroutine ends.
func dialInNetns(ctx context.Context, path string, port int32) (net.Conn, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	dialer := net.Dialer{Timeout: portDialTimeout}
	if path == "" {
		return dialPort(ctx, &dialer, addr, port)
	}
	type result struct {
		conn net.Conn
		err  error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("opening the host network namespace: %w", err)}
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(path)
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("opening the pod's network namespace: %w", err)}
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("entering the pod's network namespace: %w", err)}
			return
		}
		conn, err := dialPort(ctx, &dialer, addr, port)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		res <- result{conn, err}
	}()
	r := <-res
	return r.conn, r.err
}

// dialPort connects to addr, with an error that names the port.
func dialPort(ctx context.Context, dialer *net.Dialer, addr string, port int32) (net.Conn, error) {
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to port %d in the pod: %w", port, err)
	}
	return conn, nil
}
