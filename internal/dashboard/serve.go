package dashboard

import (
	"cmp"
	"context"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a client may take over its requests, so that slow or idle
// connections do not pile up.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers; Read its headers and body.
	ReadHeader, Read time.Duration
	// Write bounds writing a response, and each write of a stream (a live log, a
	// download): a client that takes nothing of it for so long is dropped.
	Write time.Duration
	// Idle bounds the wait for the next request of a kept-alive connection.
	Idle time.Duration
}

// DefaultTimeouts are the dashboard's timeouts unless Options says otherwise.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 2 * time.Minute}

// withDefaults fills in the timeouts t leaves zero.
func (t Timeouts) withDefaults() Timeouts {
	return Timeouts{
		ReadHeader: cmp.Or(t.ReadHeader, DefaultTimeouts.ReadHeader), Read: cmp.Or(t.Read, DefaultTimeouts.Read),
		Write: cmp.Or(t.Write, DefaultTimeouts.Write), Idle: cmp.Or(t.Idle, DefaultTimeouts.Idle),
	}
}

// HTTPServer returns the server that serves the dashboard with its timeouts; its
// requests (log streams among them) end when ctx does.
func (s *Server) HTTPServer(ctx context.Context) *http.Server {
	t := s.opts.Timeouts
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// stream writes a response that lasts as long as its content does (a live log, a
// download): it lifts the server's deadlines, then gives each write and flush the
// write timeout to reach the client.
type stream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// newStream lifts the server's deadlines of the request w answers. The request has
// been read: its read deadline would otherwise end the stream's context.
func (s *Server) newStream(w http.ResponseWriter) *stream {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	return &stream{w: w, rc: rc, timeout: s.opts.Timeouts.Write}
}

func (st *stream) Write(p []byte) (int, error) {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	return st.w.Write(p)
}

// Flush sends what is buffered to the client.
func (st *stream) Flush() {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
	_ = st.rc.Flush()
}
