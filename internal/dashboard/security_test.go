package dashboard

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/logline"
)

// recorder is a Cluster that records the notebooks it is asked to stop and writes
// the log lines it is given, pausing between them.
type recorder struct {
	unreachable
	stopped []string
	lines   []string
	pause   time.Duration
}

func (c *recorder) StopNotebook(_ context.Context, ns, name string, deleteHome bool) error {
	c.stopped = append(c.stopped, fmt.Sprintf("%s/%s delete-home=%v", ns, name, deleteHome))
	return nil
}

func (c *recorder) Job(context.Context, string, string) (*JobPage, error) { return &JobPage{}, nil }

func (c *recorder) Logs(ctx context.Context, _ LogRequest, w io.Writer) error {
	for _, l := range c.lines {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.pause):
		}
	}
	return nil
}

func newRecordingServer(t *testing.T, c Cluster, opts Options) *Server {
	t.Helper()
	opts.Config = &rest.Config{Host: "https://127.0.0.1:1"}
	opts.NewCluster = func(*rest.Config, string) (Cluster, error) { return c, nil }
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// post sends a form as the dashboard's own page does, from a loopback peer.
func post(s *Server, target, form, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form))
	r.Host, r.RemoteAddr = "127.0.0.1:8686", remote
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// TestCraftedNamesAre404: a path or query value no object can have as its name (a
// "/", "#" or "?" decoded from the path) is 404, and no page with a form is rendered
// for it; a real name gets its confirm page, whose form posts to the action asked.
func TestCraftedNamesAre404(t *testing.T) {
	s, log := newTestServer(t, false)
	for _, target := range []string{
		"/jobs/default/victim%2Fdelete%23/confirm/suspend",
		"/jobs/default/victim%2Fdelete%3F/confirm/resume",
		"/jobs/de%2Ffault/victim/confirm/suspend",
		"/jobs/default/Victim/confirm/suspend",
		"/workspace/default/notebooks/lab%2Fstop%3Fdelete-home=true%23/confirm-stop",
		"/jobs?namespace=a%2Fb",
		"/submit?namespace=a&clone=x%2Fy",
		"/jobs/default/victim/logs?replica=worker-0%2F..",
	} {
		w := serve(s, http.MethodGet, target, "127.0.0.1:8686")
		if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "<form") {
			t.Errorf("GET %s: %d, want 404 and no form:\n%s", target, w.Code, w.Body.String())
		}
	}
	for _, target := range []string{"/jobs/default/victim%2Fdelete%23/suspend", "/workspace/default/notebooks/lab%2Fx/stop"} {
		if w := post(s, target, "", "127.0.0.1:40000"); w.Code != http.StatusNotFound || strings.Contains(log.String(), "audit:") {
			t.Errorf("POST %s: %d, audit log %q; want 404 and nothing audited", target, w.Code, log.String())
		}
	}
	w := serve(s, http.MethodGet, "/jobs/default/victim/confirm/suspend", "127.0.0.1:8686")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `action="/jobs/default/victim/suspend"`) {
		t.Errorf("GET the confirm page of victim: %d, want 200 with its suspend form:\n%s", w.Code, w.Body.String())
	}
}

// TestLinksEscapeNames: should a name with "/" and "#" reach a page, its links and
// forms keep it in one path segment.
func TestLinksEscapeNames(t *testing.T) {
	s, _ := newTestServer(t, false)
	for _, tc := range []struct {
		page string
		data map[string]string
		want string
	}{
		{"confirm", map[string]string{"Namespace": "default", "Name": "victim/delete#", "Action": "suspend", "Verb": "Suspend"},
			`action="/jobs/default/victim%2fdelete%23/suspend"`},
		{"notebookstop", map[string]string{"Namespace": "default", "Name": "lab/stop?delete-home=true#"},
			`action="/workspace/default/notebooks/lab%2fstop%3fdelete-home=true%23/stop"`},
	} {
		w := httptest.NewRecorder()
		s.renderTemplate(w, http.StatusOK, tc.page, "layout", pageData{Page: tc.data})
		if body := strings.ToLower(w.Body.String()); !strings.Contains(body, strings.ToLower(tc.want)) {
			t.Errorf("page %s lacks %s:\n%s", tc.page, tc.want, w.Body.String())
		}
	}
}

// TestNotebookStopTicksOnlyFromTheForm: the home claim goes only when the form's box
// was ticked, not when the form's action carries delete-home in its query.
func TestNotebookStopTicksOnlyFromTheForm(t *testing.T) {
	c := &recorder{}
	s := newRecordingServer(t, c, Options{})
	post(s, "/workspace/team/notebooks/lab/stop?delete-home=true", "", "127.0.0.1:40000")
	post(s, "/workspace/team/notebooks/lab/stop", "delete-home=true", "127.0.0.1:40000")
	want := []string{"team/lab delete-home=false", "team/lab delete-home=true"}
	if fmt.Sprint(c.stopped) != fmt.Sprint(want) {
		t.Errorf("stopped %q, want %q", c.stopped, want)
	}
}

// TestLocalModeAnswersLoopbackPeersOnly: a peer of another machine is refused whatever
// Host it names; a loopback peer is served.
func TestLocalModeAnswersLoopbackPeersOnly(t *testing.T) {
	s, log := newTestServer(t, false)
	for _, tc := range []struct {
		remote string
		code   int
	}{
		{"10.0.0.7:51000", http.StatusForbidden},
		{"198.19.1.2:51000", http.StatusForbidden},
		{"[fe80::1]:51000", http.StatusForbidden},
		{"127.0.0.1:51000", http.StatusBadGateway},
		{"[::1]:51000", http.StatusBadGateway},
	} {
		for _, host := range []string{"localhost", "127.0.0.1:8686"} {
			w := post(s, "/jobs/default/victim/suspend", "", tc.remote)
			r := httptest.NewRequest(http.MethodGet, "/jobs", nil)
			r.Host, r.RemoteAddr = host, tc.remote
			g := httptest.NewRecorder()
			s.ServeHTTP(g, r)
			if w.Code != tc.code || g.Code != tc.code {
				t.Errorf("peer %s, Host %s: POST %d, GET %d, want %d", tc.remote, host, w.Code, g.Code, tc.code)
			}
		}
	}
	if strings.Count(log.String(), "audit:") != 4 {
		t.Errorf("want the 4 suspends of loopback peers audited, and only those:\n%s", log.String())
	}
}

// TestLoopbackAddress: only a loopback address or localhost is loopback; an empty
// host is every interface.
func TestLoopbackAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8686": true, "127.0.0.2:0": true, "[::1]:8686": true, "localhost:8686": true,
		"0.0.0.0:8686": false, ":8686": false, "[::]:8686": false, "10.0.0.1:8686": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := LoopbackAddress(addr); got != want {
			t.Errorf("LoopbackAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestMutationsNeedABrowserPage: a POST with neither Origin nor Sec-Fetch-Site is
// refused before it reaches the cluster; with the dashboard's own Origin it passes.
func TestMutationsNeedABrowserPage(t *testing.T) {
	for _, tc := range []struct {
		header, value string
		code          int
	}{{"", "", http.StatusForbidden}, {"Origin", "http://127.0.0.1:8686", http.StatusBadGateway}, {"Origin", "http://evil.example", http.StatusForbidden}} {
		s, log := newTestServer(t, false)
		r := httptest.NewRequest(http.MethodPost, "/jobs/default/victim/delete", nil)
		r.Host, r.RemoteAddr = "127.0.0.1:8686", "127.0.0.1:40000"
		if tc.header != "" {
			r.Header.Set(tc.header, tc.value)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if audited := strings.Contains(log.String(), "audit:"); w.Code != tc.code || audited != (tc.code != http.StatusForbidden) {
			t.Errorf("POST with %s %q: %d, audited %v; want %d", tc.header, tc.value, w.Code, audited, tc.code)
		}
	}
}

// TestSignInIsRateLimited: past a burst of failures, a user at an address gets 429
// with Retry-After; behind one address (an ingress), another user does not, nor do
// tokens that claim no user.
func TestSignInIsRateLimited(t *testing.T) {
	s, _ := newTestServer(t, true)
	mallory, alice := "token="+fakeJWT("mallory"), "token="+fakeJWT("alice")
	for i := range signInBurst + 1 {
		w := post(s, "/signin", mallory, "192.0.2.1:1000")
		want := http.StatusUnauthorized
		if i == signInBurst {
			want = http.StatusTooManyRequests
		}
		if w.Code != want {
			t.Fatalf("attempt %d: %d, want %d:\n%s", i+1, w.Code, want, w.Body.String())
		}
		if want == http.StatusTooManyRequests && (w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "Too many failed sign-ins")) {
			t.Errorf("429 without Retry-After or a message: %v\n%s", w.Header(), w.Body.String())
		}
	}
	for _, tc := range []struct{ who, form, addr string }{
		{"another user behind the same address", alice, "192.0.2.1:1001"},
		{"a token that claims no user, behind the same address", "token=opaque", "192.0.2.1:1002"},
		{"the same user from another address", mallory, "192.0.2.2:1000"},
	} {
		if w := post(s, "/signin", tc.form, tc.addr); w.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", tc.who, w.Code)
		}
	}
}

// fakeJWT is a token shaped as a JWT whose subject is sub, with no valid signature.
func fakeJWT(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(`{"sub":"`+sub+`"}`)) + ".c2ln"
}

// sseLines reads the "line" events of a log stream as text, and the end's error.
func sseLines(t *testing.T, r io.Reader) (lines []string, end string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	event := ""
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			event = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: ") && event == "line":
			var e logEvent
			if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &e); err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for _, s := range e.Segments {
				text.WriteString(s.Text)
			}
			lines = append(lines, text.String())
		case strings.HasPrefix(l, "data: ") && event == "end":
			var e map[string]string
			_ = json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &e)
			return lines, e["error"]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, "(no end event)"
}

// TestLogLinesAreCapped: a line of 1 MiB reaches the browser in pieces of at most
// maxStreamLine, each but the last marked, the next line whole.
func TestLogLinesAreCapped(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	c := &recorder{lines: []string{"[worker-0] " + long, "[worker-0] after"}}
	s := newRecordingServer(t, c, Options{})
	w := serve(s, http.MethodGet, "/jobs/default/victim/logs/stream", "127.0.0.1:8686")
	lines, end := sseLines(t, w.Body)
	if end != "" || len(lines) < 2 {
		t.Fatalf("%d lines, end %q", len(lines), end)
	}
	var joined strings.Builder
	for i, l := range lines[:len(lines)-1] {
		if len(l) > maxStreamLine+len(logline.Mark) || strings.HasSuffix(l, logline.Mark) == (i == len(lines)-2) {
			t.Fatalf("piece %d of %d: %d bytes, marked %v", i, len(lines)-1, len(l), strings.HasSuffix(l, logline.Mark))
		}
		joined.WriteString(strings.TrimSuffix(l, logline.Mark))
	}
	if joined.String() != long || lines[len(lines)-1] != "after" {
		t.Errorf("the long line rejoined whole: %v; last line %q", joined.String() == long, lines[len(lines)-1])
	}
}

// TestStreamsOutliveServerTimeouts: the server's read and write timeouts cut a slow
// client's request, yet a log stream longer than both delivers every line.
func TestStreamsOutliveServerTimeouts(t *testing.T) {
	c := &recorder{pause: 50 * time.Millisecond}
	for i := range 16 {
		c.lines = append(c.lines, fmt.Sprintf("[chief-0] tick %d", i))
	}
	timeouts := Timeouts{ReadHeader: 200 * time.Millisecond, Read: 200 * time.Millisecond, Write: 200 * time.Millisecond, Idle: time.Second}
	s := newRecordingServer(t, c, Options{Timeouts: timeouts})
	hs := httptest.NewUnstartedServer(nil)
	hs.Config = s.HTTPServer(context.Background())
	hs.Start()
	defer hs.Close()
	if hs.Config.ReadTimeout != timeouts.Read || hs.Config.WriteTimeout != timeouts.Write || hs.Config.IdleTimeout != timeouts.Idle {
		t.Errorf("server timeouts %v/%v/%v, want %+v", hs.Config.ReadTimeout, hs.Config.WriteTimeout, hs.Config.IdleTimeout, timeouts)
	}

	start := time.Now()
	resp, err := http.Get(hs.URL + "/jobs/default/ticker/logs/stream")
	if err != nil {
		t.Fatal(err)
	}
	lines, end := sseLines(t, resp.Body)
	resp.Body.Close()
	if len(lines) != len(c.lines) || end != "" {
		t.Errorf("after %v: %d of %d lines, end %q", time.Since(start).Round(time.Millisecond), len(lines), len(c.lines), end)
	}

	// A request whose body never comes is answered, and its connection closed, at
	// the read timeout.
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start = time.Now()
	fmt.Fprintf(conn, "POST /submit HTTP/1.1\r\nHost: 127.0.0.1\r\nSec-Fetch-Site: same-origin\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nname=a")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	if ended := time.Since(start); err != nil || ended > 2*time.Second {
		t.Errorf("a request without its body: connection open for %v (%v); read timeout %v", ended.Round(time.Millisecond), err, timeouts.Read)
	}
}

// TestS3Endpoints: the allow-list takes host:port or a URL; an endpoint not on it is
// refused with 403, naming the endpoint and the setting that would allow it.
func TestS3Endpoints(t *testing.T) {
	a, err := AllowS3Endpoints([]string{"minio.storage.svc:9000", "https://S3.example.com:443/"})
	if err != nil {
		t.Fatal(err)
	}
	for endpoint, ok := range map[string]bool{
		"minio.storage.svc:9000": true, "s3.example.com:443": true, "S3.EXAMPLE.COM:443": true,
		"169.254.169.254:80": false, "minio.storage.svc:9001": false, "kubernetes.default.svc:443": false,
	} {
		err := a.Check(endpoint)
		if (err == nil) != ok {
			t.Errorf("Check(%s): %v, want allowed %v", endpoint, err, ok)
		}
		if err != nil && (statusOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), endpoint) ||
			!strings.Contains(err.Error(), S3EndpointsFlag) || !strings.Contains(err.Error(), S3EndpointsValue)) {
			t.Errorf("Check(%s): %q (status %d) does not name the endpoint and the setting, or is no 403", endpoint, err, statusOf(err))
		}
	}
	none, _ := AllowS3Endpoints(nil)
	if err := none.Check("minio.storage.svc:9000"); err == nil || !strings.Contains(err.Error(), "now none") {
		t.Errorf("an empty list allows: %v", err)
	}
	if err := AnyS3Endpoint().Check("169.254.169.254:80"); err != nil {
		t.Errorf("AnyS3Endpoint refuses: %v", err)
	}
	for _, bad := range []string{"minio", "http://minio:9000/bucket", ""} {
		if _, err := AllowS3Endpoints([]string{bad}); err == nil {
			t.Errorf("AllowS3Endpoints(%q) accepted", bad)
		}
	}
	if !errors.Is(none.Check("x:1"), ErrForbidden) {
		t.Errorf("a refusal is not ErrForbidden")
	}
}

// TestMetricsNeedASignIn: in the cluster, /metrics without a session is 401 naming the
// flag that opens it; with a session, or with the flag, it serves the metrics.
func TestMetricsNeedASignIn(t *testing.T) {
	get := func(s *Server, cookie string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Host, r.RemoteAddr = "tfk8s.example.com", "192.0.2.1:1000"
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	s, _ := newTestServer(t, true)
	for _, cookie := range []string{"", "no-such-session"} {
		w := get(s, cookie)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), MetricsFlag) {
			t.Errorf("cookie %q: %d, want 401 naming %s:\n%s", cookie, w.Code, MetricsFlag, w.Body.String())
		}
		if strings.Contains(w.Body.String(), "tfk8s_dashboard_requests_total") {
			t.Errorf("cookie %q: the metrics were served", cookie)
		}
	}
	id := s.sessions.add(&session{user: "alice", cluster: unreachable{}, expires: time.Now().Add(time.Hour)})
	if w := get(s, id); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "tfk8s_dashboard_requests_total") {
		t.Errorf("signed in: %d, want the metrics:\n%s", w.Code, w.Body.String())
	}

	open, err := New(Options{Config: s.opts.Config, NewCluster: s.opts.NewCluster, InCluster: true, MetricsUnauthenticated: true})
	if err != nil {
		t.Fatal(err)
	}
	get(open, "") // counted, so that the next shows a line
	if w := get(open, ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "tfk8s_dashboard_requests_total") {
		t.Errorf("with %s: %d, want the metrics:\n%s", MetricsFlag, w.Code, w.Body.String())
	}
}
