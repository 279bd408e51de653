package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// kubeletServer is the node's HTTPS API: container logs for `kubectl logs` through the
// API server, and a health check.
type kubeletServer struct {
	m   *manager
	srv *http.Server
	ln  net.Listener
}

// listenKubeletAPI binds the kubelet API on the node IP and port.
func listenKubeletAPI(m *manager) (*kubeletServer, error) {
	cert, err := servingCertificate(m.opts.NodeName, m.opts.NodeIP, time.Now())
	if err != nil {
		return nil, err
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if m.opts.ClientCAFile != "" {
		pool, err := clientCAPool(m.opts.ClientCAFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.ClientCAs = pool
		tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	addr := net.JoinHostPort(m.opts.NodeIP, strconv.Itoa(m.opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s for the kubelet API: %w", addr, err)
	}
	s := &kubeletServer{m: m, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	s.registerPortForward(mux)
	s.srv = &http.Server{
		Handler: mux, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		// Refused handshakes (clients without a certificate) are routine, not errors.
		ErrorLog: stdlog.New(logWriter{m.log.V(2)}, "", 0),
	}
	return s, nil
}

// serve answers requests until shutdown.
func (s *kubeletServer) serve() {
	if err := s.srv.ServeTLS(s.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.m.log.Error(err, "Serving the kubelet API")
	}
}

// shutdown stops the server; followed logs end.
func (s *kubeletServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// containerLogs serves GET /containerLogs/{namespace}/{pod}/{container} with the
// kubelet's query parameters: follow, previous, timestamps, tailLines, limitBytes,
// sinceSeconds and sinceTime.
func (s *kubeletServer) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, previous, err := parseLogQuery(r, time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, finished, err := s.logSource(ns, podName, container, previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if path == "" {
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start", container, podName), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fw := flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	if err := writeLogs(r.Context(), path, opts, fw, finished); err != nil {
		s.m.log.V(2).Info("Serving logs", "pod", ns+"/"+podName, "container", container, "error", err)
	}
}

// logSource finds a container's log file and a function telling when a followed log is
// complete: from the pod's worker while it exists, else from the files a finished pod
// left.
func (s *kubeletServer) logSource(ns, podName, container string, previous bool) (string, func() bool, error) {
	if w := s.m.worker(ns, podName); w != nil {
		r := w.runner(container)
		if r == nil {
			return "", nil, fmt.Errorf("container %q not found in pod %q", container, podName)
		}
		inst := r.current()
		finished := func() bool { return previous || inst == nil || r.current() != inst }
		return r.logPath(previous), finished, nil
	}
	pod, err := s.m.lister.Pods(ns).Get(podName)
	if err != nil {
		return "", nil, fmt.Errorf("pod %s/%s not found on this node", ns, podName)
	}
	dir := filepath.Join(s.m.podLogDir(pod), container)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("no logs for container %q in pod %q", container, podName)
	}
	last := -1
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log")); err == nil && n > last {
			last = n
		}
	}
	if previous {
		last--
	}
	if last < 0 {
		return "", nil, fmt.Errorf("no previous logs for container %q in pod %q", container, podName)
	}
	return filepath.Join(dir, fmt.Sprintf("%d.log", last)), func() bool { return true }, nil
}

// parseLogQuery reads the log options from a request's query.
func parseLogQuery(r *http.Request, now time.Time) (logOptions, bool, error) {
	q := r.URL.Query()
	opts := logOptions{TailLines: -1}
	opts.Follow = q.Get("follow") == "true"
	opts.Timestamps = q.Get("timestamps") == "true"
	previous := q.Get("previous") == "true"
	if v := q.Get("tailLines"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, false, fmt.Errorf("invalid tailLines %q", v)
		}
		opts.TailLines = n
	}
	if v := q.Get("limitBytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, false, fmt.Errorf("invalid limitBytes %q", v)
		}
		opts.LimitBytes = n
	}
	if v := q.Get("sinceSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return opts, false, fmt.Errorf("invalid sinceSeconds %q", v)
		}
		opts.SinceTime = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return opts, false, fmt.Errorf("invalid sinceTime %q: %w", v, err)
		}
		opts.SinceTime = t
	}
	return opts, previous, nil
}

// logWriter turns the HTTP server's log lines into log messages.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("Kubelet API", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}

// flushWriter lets writeLogs flush each batch of output, so followed logs reach the
// client at once.
type flushWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func (fw flushWriter) Write(p []byte) (int, error) { return fw.w.Write(p) }

// Flush implements the flush writeLogs calls after each batch.
func (fw flushWriter) Flush() {
	if fw.f != nil {
		fw.f.Flush()
	}
}
