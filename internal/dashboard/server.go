// Package dashboard is tfk8s's web dashboard: the jobs of a namespace, a job's
// replicas, conditions, events, YAML and TF_CONFIG, its logs streamed live, its
// progress and curves from the records its agents store in S3, and suspend, resume
// and delete; a job submitted from a form or YAML (checked by a dry run of the API
// server first), a job's stored artifacts, and the notebooks and TensorBoards of a
// namespace, in a browser.
//
// It never acts with an identity of its own. Locally (tfk8s dashboard) it uses the
// user's kubeconfig, as kubectl proxy does, listens on loopback only and answers only
// loopback peers that name a loopback host; in-cluster each user signs in with a
// bearer token (failed sign-ins limited per user and address, and per user), kept
// server-side in a session, and every API call is made with that token, so that a
// user sees nothing RBAC does not let them see; /metrics too needs a sign-in there.
//
// Every name in a request's path or form is checked as the name of the object it
// stands for (404 otherwise) and escaped in every link. Pages are html/template, made
// live with htmx (vendored, static/htmx.min.js) and one small script of our own for
// log streams, whose lines are capped at 64 KiB, and for charts, which uPlot draws
// (vendored, static/uPlot.min.js); the Content-Security-Policy allows
// no inline script or style, and every mutation is a POST checked by
// net/http.CrossOriginProtection and written to the audit log.
package dashboard

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// DefaultAddress is where tfk8s dashboard listens unless told otherwise.
const DefaultAddress = "127.0.0.1:8686"

// DefaultMaxLogStreams bounds the log streams one session has open at once.
const DefaultMaxLogStreams = 4

// contentSecurityPolicy allows scripts, styles and connections from the dashboard
// itself only: no inline script or style, no eval, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Options configure a dashboard Server.
type Options struct {
	// Config reaches the API server. Locally it carries the kubeconfig's credentials,
	// which every request uses. In-cluster its credentials are the dashboard's own and
	// serve only the TokenReview of a sign-in; requests use the user's token.
	Config *rest.Config
	// NewCluster connects as a user.
	NewCluster NewClusterFunc
	// Namespace is the namespace shown first.
	Namespace string
	// InCluster asks users to sign in with a bearer token.
	InCluster bool
	// MaxLogStreams bounds the log streams of one session; 0 means DefaultMaxLogStreams.
	MaxLogStreams int
	// Log receives the audit lines (one per mutation) and server errors.
	Log io.Writer
	// Timeouts of HTTPServer; a zero field takes DefaultTimeouts'.
	Timeouts Timeouts
	// MetricsUnauthenticated serves /metrics in the cluster to anyone who reaches the
	// dashboard, for a scraper that cannot sign in; else only to a signed-in user.
	MetricsUnauthenticated bool
	// TrustedProxies are the peers (an ingress) whose X-Forwarded-For names the client
	// whose failed sign-ins are counted; none: the peer is the client.
	TrustedProxies []netip.Prefix
}

// MetricsFlag names the setting that serves /metrics without a sign-in, as a refusal
// tells the user; MetricsValue is the chart's value of it.
const (
	MetricsFlag  = "--metrics-unauthenticated"
	MetricsValue = "dashboard.metrics.unauthenticated"
)

// Server is the dashboard's HTTP handler.
type Server struct {
	opts     Options
	pages    map[string]*template.Template
	sessions *sessions
	signIns  *signInLimit // failed sign-ins by user and client address
	local    *session     // the one session of local mode
	metrics  *metrics
	handler  http.Handler
}

// New returns a dashboard for opts.
func New(opts Options) (*Server, error) {
	if opts.Config == nil || opts.NewCluster == nil {
		return nil, errors.New("creating the dashboard: Options.Config and Options.NewCluster are required")
	}
	if opts.MaxLogStreams <= 0 {
		opts.MaxLogStreams = DefaultMaxLogStreams
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	opts.Timeouts = opts.Timeouts.withDefaults()
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, pages: pages, sessions: newSessions(), metrics: newMetrics(),
		signIns: newSignInLimit(time.Now)}
	if !opts.InCluster {
		c, err := opts.NewCluster(opts.Config, opts.Namespace)
		if err != nil {
			return nil, fmt.Errorf("connecting to the cluster: %w", err)
		}
		s.local = &session{user: "kubeconfig", cluster: c}
	}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Registry holds the server's Prometheus metrics, served at /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.registry }

// routes wires the pages. Every handler runs behind the security headers, every
// request that is not GET or HEAD behind CrossOriginProtection and fromBrowserPage,
// and locally every request behind localOnly.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /signin", s.signInPage)
	mux.HandleFunc("POST /signin", s.signIn)
	mux.HandleFunc("POST /signout", s.signOut)
	mux.HandleFunc("GET /{$}", s.withSession(s.home))
	mux.HandleFunc("GET /jobs", s.withSession(s.jobsPage))
	mux.HandleFunc("GET /jobs/table", s.withSession(s.jobsTable))
	mux.HandleFunc("GET /jobs/{namespace}/{name}", s.withSession(s.jobPage))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/status", s.withSession(s.jobStatus))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/progress", s.withSession(s.jobProgress))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/logs", s.withSession(s.logsPage))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/logs/stream", s.withSession(s.logsStream))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/logs/download", s.withSession(s.logsDownload))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/confirm/{action}", s.withSession(s.confirmPage))
	mux.HandleFunc("POST /jobs/{namespace}/{name}/{action}", s.withSession(s.act))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/artifacts", s.withSession(s.artifactsPage))
	mux.HandleFunc("GET /jobs/{namespace}/{name}/artifacts/download", s.withSession(s.artifactDownload))
	mux.HandleFunc("GET /runs", s.withSession(s.runsPage))
	mux.HandleFunc("GET /runs/{namespace}/compare", s.withSession(s.compareRuns))
	mux.HandleFunc("GET /runs/{namespace}/{name}/{run}", s.withSession(s.runPage))
	mux.HandleFunc("GET /submit", s.withSession(s.submitPage))
	mux.HandleFunc("POST /submit", s.withSession(s.submit))
	mux.HandleFunc("GET /workspace", s.withSession(s.workspacePage))
	mux.HandleFunc("POST /workspace/{namespace}/notebooks", s.withSession(s.startNotebook))
	mux.HandleFunc("GET /workspace/{namespace}/notebooks/{name}/confirm-stop", s.withSession(s.confirmStopPage))
	mux.HandleFunc("POST /workspace/{namespace}/notebooks/{name}/stop", s.withSession(s.stopNotebook))

	cop := http.NewCrossOriginProtection()
	h := fromBrowserPage(cop.Handler(mux))
	if !s.opts.InCluster {
		h = localOnly(h)
	}
	return s.metrics.instrument(mux, securityHeaders(h))
}

// metricsHandler serves the metrics. In the cluster they need a sign-in unless
// MetricsUnauthenticated: the routes and codes of every request tell who uses the
// dashboard how, which is no business of whoever reaches its port.
func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
	if s.local != nil || s.opts.MetricsUnauthenticated {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(sessionCookie); err == nil && s.sessions.get(c.Value) != nil {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("sign in first: /metrics needs a session unless the dashboard runs with %s (chart value %s=true)",
			MetricsFlag, MetricsValue), http.StatusUnauthorized)
	})
}

// securityHeaders sets the headers every response carries: the CSP, no sniffing of
// content types, no framing and no referrer leaving the dashboard.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// localOnly refuses a request whose peer is not on this machine's loopback, or whose
// Host is not a loopback name or address: the local dashboard acts with the user's
// kubeconfig, so no other machine may reach it (whatever Host it sends), and a page
// of another site must not reach it through a DNS name rebound to 127.0.0.1.
func localOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackPeer(r.RemoteAddr) {
			http.Error(w, fmt.Sprintf("peer %s refused: the local dashboard answers connections from this machine's loopback only", r.RemoteAddr), http.StatusForbidden)
			return
		}
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		ip := net.ParseIP(strings.Trim(host, "[]"))
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, fmt.Sprintf("host %q refused: the local dashboard answers on localhost and loopback addresses only", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackPeer reports whether a connection's remote address, host:port, is a
// loopback address.
func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddress reports whether address, HOST:PORT, listens on loopback only: a
// loopback IP address or localhost. An empty host listens on every interface.
func LoopbackAddress(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fromBrowserPage refuses a request that changes something and carries neither
// Origin nor Sec-Fetch-Site. CrossOriginProtection lets such a request through as
// one of no browser; but every mutation of the dashboard is a form of its own pages,
// which every browser sends with Origin, and a browser old enough to send neither
// would not be protected from another site's form. So refusing costs a browser
// nothing and closes that gap; scripts have the tfk8s command line.
func fromBrowserPage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "" {
				http.Error(w, r.Method+" refused: it carries neither Origin nor Sec-Fetch-Site, as a browser's form of the dashboard does", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// parsePages parses each page with the layout; a page also defines the fragments
// htmx fetches alone.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"age": age, "since": since, "lower": strings.ToLower, "scalar": tfevents.Value.Display,
		"until": func(t time.Time) string { return since(time.Until(t)) },
		"deref": func(b *bool) bool { return b != nil && *b },
		"size":  storage.FormatBytes,
		"list":  func(v ...string) []string { return v },
		"gpus":  gpus,
		// Names are checked before they reach a page; escaping keeps a link whole
		// should one ever slip through.
		"path": url.PathEscape,
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"jobs", "job", "logs", "confirm", "signin", "error", "submit", "artifacts", "workspace", "notebookstop", "runs", "run", "compare"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// age renders the time since t as kubectl does ("5m", "3d").
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return since(time.Since(t))
}

// since renders a duration as kubectl does, "-" if none.
func since(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return duration.HumanDuration(d)
}
