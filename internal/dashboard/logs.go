package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tfk8s/tfk8s/internal/logline"
)

// maxStreamBytes bounds what one log stream sends to the browser; the download has
// the rest.
const maxStreamBytes = 32 << 20

// logRequest reads which logs a request asks for.
func logRequest(r *http.Request) LogRequest {
	previous := r.FormValue("previous") == "1"
	return LogRequest{
		Namespace: r.PathValue("namespace"), Job: r.PathValue("name"),
		Replica:  strings.ToLower(r.FormValue("replica")),
		Previous: previous, Follow: !previous,
	}
}

// logsPage is the page the browser streams logs into (static/dashboard.js opens the
// stream it names).
func (s *Server) logsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	req := logRequest(r)
	page, err := sess.cluster.Job(r.Context(), req.Namespace, req.Job)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := url.Values{}
	if req.Replica != "" {
		q.Set("replica", req.Replica)
	}
	if req.Previous {
		q.Set("previous", "1")
	}
	base := "/jobs/" + url.PathEscape(req.Namespace) + "/" + url.PathEscape(req.Job) + "/logs"
	s.render(w, r, http.StatusOK, "logs", s.data(sess, req.Namespace, "Logs of "+req.Job, map[string]any{
		"Job": page.Job, "Replicas": page.Replicas, "Request": req,
		"Stream": base + "/stream?" + q.Encode(), "Download": base + "/download?" + q.Encode(),
	}))
}

// logEvent is one line of a log stream as the browser receives it: the replica and
// the line's text in segments, each with the CSS classes of its ANSI attributes.
type logEvent struct {
	Replica  string        `json:"replica"`
	Segments []ansiSegment `json:"segments"`
}

// logsStream streams logs as server-sent events: a "line" event per line, then one
// "end" event (with the error, if any) after which the browser closes the stream.
func (s *Server) logsStream(w http.ResponseWriter, r *http.Request, sess *session) {
	req := logRequest(r)
	// The logs of a job the user may not read are refused before anything is sent; a
	// job already deleted may still have logs in S3.
	if _, err := sess.cluster.Job(r.Context(), req.Namespace, req.Job); err != nil && !apierrors.IsNotFound(err) {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	if !sess.openStream(s.opts.MaxLogStreams) {
		http.Error(w, fmt.Sprintf("too many log streams: at most %d at once", s.opts.MaxLogStreams), http.StatusTooManyRequests)
		return
	}
	defer sess.closeStream()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := s.newStream(w)
	st.Flush()

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := sess.cluster.Logs(ctx, req, pw)
		pw.Close()
		done <- err
	}()
	sent, err := sendLines(st, pr, maxStreamBytes)
	pr.CloseWithError(io.ErrClosedPipe)
	cancel()
	logErr := <-done
	msg := ""
	switch {
	case err != nil && ctx.Err() == nil:
		msg = err.Error()
	case sent >= maxStreamBytes:
		msg = fmt.Sprintf("stopped after %d MiB: download the log for the rest", maxStreamBytes>>20)
	case logErr != nil && r.Context().Err() == nil:
		msg = logErr.Error()
	}
	end, _ := json.Marshal(map[string]string{"error": msg})
	fmt.Fprintf(st, "event: end\ndata: %s\n\n", end)
	st.Flush()
}

// maxStreamLine is the longest line a log stream holds: a line the CLI split at
// logline.Max still fits whole with its "[replica] " prefix and its mark.
const maxStreamLine = logline.Max + 256

// sendLines sends each line of r as a "line" event until r ends or limit bytes were
// read, and returns how many were. A line longer than maxStreamLine goes in pieces,
// each but the last ending with logline.Mark, so that memory stays bounded whatever
// a pod prints.
func sendLines(w *stream, r io.Reader, limit int) (int, error) {
	lr := logline.NewReader(r, maxStreamLine)
	// The encoder reuses its buffer: a stream of long lines makes little garbage.
	enc := json.NewEncoder(w)
	sent := 0
	for sent < limit {
		line, cut, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
		sent += len(line) + 1
		replica, text := splitReplica(strings.TrimSuffix(string(line), "\r"))
		segments := ansiSegments(text)
		if cut {
			segments = append(segments, ansiSegment{Text: logline.Mark})
		}
		// Encode ends the data with a newline; one more ends the event.
		if _, werr := io.WriteString(w, "event: line\ndata: "); werr != nil {
			return sent, werr
		}
		if werr := enc.Encode(logEvent{Replica: replica, Segments: segments}); werr != nil {
			return sent, werr
		}
		if _, werr := io.WriteString(w, "\n"); werr != nil {
			return sent, werr
		}
		if lr.Buffered() == 0 {
			w.Flush()
		}
	}
	return sent, nil
}

// splitReplica splits "[worker-0] text" into the replica and the text.
func splitReplica(line string) (string, string) {
	if strings.HasPrefix(line, "[") {
		if replica, text, ok := strings.Cut(line[1:], "] "); ok && !strings.ContainsAny(replica, " []") {
			return replica, text
		}
	}
	return "", line
}

// logsDownload sends the logs there are now as a text file, as tfk8s logs prints them.
func (s *Server) logsDownload(w http.ResponseWriter, r *http.Request, sess *session) {
	req := logRequest(r)
	req.Follow = false
	if _, err := sess.cluster.Job(r.Context(), req.Namespace, req.Job); err != nil && !apierrors.IsNotFound(err) {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	name := req.Job
	if req.Replica != "" {
		name += "-" + req.Replica
	}
	if req.Previous {
		name += "-previous"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".log"}))
	st := s.newStream(w)
	if err := sess.cluster.Logs(r.Context(), req, st); err != nil {
		fmt.Fprintf(st, "\n# tfk8s dashboard: %v\n", err)
	}
}
