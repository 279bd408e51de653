package s3server

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// Counter is a proxy in front of a Server that counts the S3 requests made through
// it, and the bytes of their answers, by kind: a test points the code under test at
// Endpoint and asserts how many LISTs or GETs a user's action cost. Signatures still
// verify: the proxy passes the Host header the client signed.
type Counter struct {
	// Endpoint is the proxy's host:port, plain HTTP.
	Endpoint string

	server *Server
	mu     sync.Mutex
	counts map[string]int
	bytes  map[string]int64
}

// Count starts a Counter in front of s; it stops when the test ends.
func (s *Server) Count(t testing.TB) *Counter {
	t.Helper()
	target := &url.URL{Scheme: "http", Host: s.Endpoint}
	proxy := httputil.NewSingleHostReverseProxy(target)
	c := &Counter{server: s, counts: map[string]int{}, bytes: map[string]int64{}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := requestKind(r)
		cw := &countingWriter{ResponseWriter: w}
		proxy.ServeHTTP(cw, r)
		c.mu.Lock()
		c.counts[kind]++
		c.bytes[kind] += cw.n
		c.mu.Unlock()
	}))
	t.Cleanup(front.Close)
	c.Endpoint = strings.TrimPrefix(front.URL, "http://")
	return c
}

// Client returns a storage client of the server whose requests go through the counter.
func (c *Counter) Client(t testing.TB) *storage.Client {
	t.Helper()
	cfg := c.server.Config()
	cfg.Endpoint = c.Endpoint
	sc, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// requestKind names an S3 request: LIST for a listing of a bucket's keys, else the
// HTTP method (GET, HEAD, PUT, POST, DELETE).
func requestKind(r *http.Request) string {
	path := strings.Trim(r.URL.Path, "/")
	if r.Method == http.MethodGet && path != "" && !strings.Contains(path, "/") && !r.URL.Query().Has("location") {
		return "LIST"
	}
	return r.Method
}

// Get returns how many requests of kind went through since the start or the last
// Reset.
func (c *Counter) Get(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[kind]
}

// Bytes returns the bytes of the answers to requests of kind, bodies alone.
func (c *Counter) Bytes(kind string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes[kind]
}

// Total returns how many requests of any kind went through.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Reset forgets the requests counted so far.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
	clear(c.bytes)
}

// countingWriter counts the bytes of a response's body.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the writer underneath, to flush.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
