package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/runs"
)

// unreachable is a Cluster whose every call fails, for the tests of what the server
// does around the cluster: headers, host checks, limits, metrics.
type unreachable struct{}

var errUnreachable = errors.New("the API server is unreachable")

func (unreachable) Namespaces(context.Context) ([]string, error)          { return nil, errUnreachable }
func (unreachable) Jobs(context.Context, string) ([]JobRow, error)        { return nil, errUnreachable }
func (unreachable) Job(context.Context, string, string) (*JobPage, error) { return nil, errUnreachable }
func (unreachable) Logs(context.Context, LogRequest, io.Writer) error     { return errUnreachable }
func (unreachable) Suspend(context.Context, string, string, bool) error   { return errUnreachable }
func (unreachable) Delete(context.Context, string, string) error          { return errUnreachable }
func (unreachable) Submit(context.Context, SubmitRequest) (*Submitted, error) {
	return nil, errUnreachable
}
func (unreachable) Clone(context.Context, string, string) (*SubmitRequest, error) {
	return nil, errUnreachable
}
func (unreachable) Artifacts(context.Context, string, string) ([]ArtifactRow, error) {
	return nil, errUnreachable
}
func (unreachable) Artifact(context.Context, string, string, string, io.Writer) error {
	return errUnreachable
}
func (unreachable) Workspace(context.Context, string) (*Workspace, error) { return nil, errUnreachable }
func (unreachable) StartNotebook(context.Context, NotebookRequest) error  { return errUnreachable }
func (unreachable) StopNotebook(context.Context, string, string, bool) error {
	return errUnreachable
}
func (unreachable) RequestTensorBoard(context.Context, string, string) error { return errUnreachable }
func (unreachable) Progress(context.Context, string, string) (*Progress, error) {
	return nil, errUnreachable
}
func (unreachable) Runs(context.Context, runs.Query) ([]runs.Run, error) { return nil, errUnreachable }
func (unreachable) Run(context.Context, string, string, string) (*RunPage, error) {
	return nil, errUnreachable
}

func newTestServer(t *testing.T, inCluster bool) (*Server, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	s, err := New(Options{
		Config:     &rest.Config{Host: "https://127.0.0.1:1"},
		NewCluster: func(*rest.Config, string) (Cluster, error) { return unreachable{}, nil },
		InCluster:  inCluster, Log: &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, &log
}

// serve sends a request from a loopback peer, as the local dashboard's users are.
func serve(s *Server, method, target, host string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = host
	r.RemoteAddr = "127.0.0.1:40000"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestSecurityHeaders: every response, an error or a static file, carries the CSP
// and the other headers.
func TestSecurityHeaders(t *testing.T) {
	s, _ := newTestServer(t, false)
	for _, target := range []string{"/jobs", "/static/dashboard.js", "/no/such/page", "/signin"} {
		w := serve(s, http.MethodGet, target, "127.0.0.1:8686")
		h := w.Result().Header
		if got := h.Get("Content-Security-Policy"); got != contentSecurityPolicy {
			t.Errorf("GET %s: CSP %q", target, got)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", target, h)
		}
	}
	if !strings.Contains(contentSecurityPolicy, "frame-ancestors 'none'") || strings.Contains(contentSecurityPolicy, "unsafe") {
		t.Errorf("CSP %q allows framing or unsafe sources", contentSecurityPolicy)
	}
}

// TestLocalModeAnswersLoopbackHostsOnly: a DNS name rebound to 127.0.0.1 does not
// reach the dashboard that acts with the user's kubeconfig.
func TestLocalModeAnswersLoopbackHostsOnly(t *testing.T) {
	s, _ := newTestServer(t, false)
	for host, want := range map[string]int{
		"127.0.0.1:8686": http.StatusBadGateway, // reaches the (unreachable) cluster
		"localhost:8686": http.StatusBadGateway,
		"[::1]:8686":     http.StatusBadGateway,
		"evil.example":   http.StatusForbidden,
		"10.0.0.1:8686":  http.StatusForbidden,
	} {
		if got := serve(s, http.MethodGet, "/jobs", host).Code; got != want {
			t.Errorf("Host %s: %d, want %d", host, got, want)
		}
	}
}

// TestInClusterNeedsSignIn: without a session, pages go to the sign-in form and
// everything else is 401; a POST from another origin is refused before that.
func TestInClusterNeedsSignIn(t *testing.T) {
	s, _ := newTestServer(t, true)
	if w := serve(s, http.MethodGet, "/jobs", "dashboard.example"); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/signin" {
		t.Errorf("GET /jobs: %d to %q, want 303 to /signin", w.Code, w.Header().Get("Location"))
	}
	if w := serve(s, http.MethodGet, "/jobs/a/b/logs/stream", "dashboard.example"); w.Code != http.StatusUnauthorized {
		t.Errorf("GET a log stream: %d, want 401", w.Code)
	}
	r := httptest.NewRequest(http.MethodPost, "/jobs/a/b/delete", nil)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", w.Code)
	}
}

// TestLogStreamsPerSessionAreLimited: past MaxLogStreams open streams, a session's
// next one is refused with 429.
func TestLogStreamsPerSessionAreLimited(t *testing.T) {
	sess := &session{}
	for i := range DefaultMaxLogStreams {
		if !sess.openStream(DefaultMaxLogStreams) {
			t.Fatalf("stream %d refused", i+1)
		}
	}
	if sess.openStream(DefaultMaxLogStreams) {
		t.Errorf("stream %d allowed, past the limit of %d", DefaultMaxLogStreams+1, DefaultMaxLogStreams)
	}
	sess.closeStream()
	if !sess.openStream(DefaultMaxLogStreams) {
		t.Errorf("a stream refused once another closed")
	}
}

// TestRequestsAreCountedByRoute: the metric's labels are the route, not the path.
func TestRequestsAreCountedByRoute(t *testing.T) {
	s, _ := newTestServer(t, false)
	serve(s, http.MethodGet, "/jobs/ns-1/job-1", "127.0.0.1")
	serve(s, http.MethodGet, "/jobs/ns-2/job-2", "127.0.0.1")
	w := serve(s, http.MethodGet, "/metrics", "127.0.0.1")
	want := `tfk8s_dashboard_requests_total{code="502",route="GET /jobs/{namespace}/{name}"} 2`
	if !strings.Contains(w.Body.String(), want) {
		t.Errorf("/metrics lacks %q:\n%s", want, w.Body.String())
	}
}

// TestVendoredLibrariesArePinned: each vendored library (htmx, uPlot and its style
// sheet) is the upstream file whose version and SHA-256 its first line names,
// unchanged.
func TestVendoredLibrariesArePinned(t *testing.T) {
	for _, tc := range []struct{ file, library string }{
		{"static/htmx.min.js", "htmx"},
		{"static/uPlot.min.js", "uPlot"},
		{"static/uPlot.min.css", "uPlot"},
	} {
		b, err := staticFS.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		first, body, _ := bytes.Cut(b, []byte("\n"))
		m := regexp.MustCompile(`^(?://|/\*) ` + tc.library + ` (\S+) .* SHA-256 of the upstream file: ([0-9a-f]{64})(?: \*/)?$`).FindSubmatch(first)
		if m == nil {
			t.Errorf("%s: first line %q names no version and SHA-256", tc.file, first)
			continue
		}
		sum := sha256.Sum256(body)
		if got := hex.EncodeToString(sum[:]); got != string(m[2]) {
			t.Errorf("%s %s: SHA-256 %s, the comment says %s", tc.file, m[1], got, m[2])
		}
	}
}

// TestWorkspaceMutationsRefuseCrossOrigin: starting or stopping a notebook and
// re-opening a TensorBoard are refused from another site before they reach the
// cluster (no audit line); from the dashboard's own pages they reach it, audited.
func TestWorkspaceMutationsRefuseCrossOrigin(t *testing.T) {
	for _, target := range []string{"/workspace/a/notebooks", "/workspace/a/notebooks/lab/stop", "/jobs/a/mnist/tensorboard"} {
		for _, tc := range []struct {
			site    string
			code    int
			audited bool
		}{{"cross-site", http.StatusForbidden, false}, {"same-origin", http.StatusBadGateway, true}} {
			s, log := newTestServer(t, false)
			r := httptest.NewRequest(http.MethodPost, target, strings.NewReader("name=lab"))
			r.Host, r.RemoteAddr = "127.0.0.1:8686", "127.0.0.1:40000"
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Sec-Fetch-Site", tc.site)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != tc.code || strings.Contains(log.String(), "audit:") != tc.audited {
				t.Errorf("%s POST %s: %d, audit log %q; want %d, audited %v", tc.site, target, w.Code, log.String(), tc.code, tc.audited)
			}
		}
	}
}
