package dashboard

import (
	"mime"
	"net/http"
	"path"
)

// artifactsData is the artifacts page: a job's stored files, by replica.
type artifactsData struct {
	Namespace, Job string
	Rows           []ArtifactRow
}

// artifactsPage lists what a job's replicas stored. The CLI reads S3 with the S3
// settings of the job's storage Secret, read with the user's credentials, so that a
// user who may not read the job or its Secret gets the API server's 403 and nothing
// of S3.
func (s *Server) artifactsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	rows, err := sess.cluster.Artifacts(r.Context(), ns, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "artifacts", s.data(sess, ns, "Artifacts of "+name, &artifactsData{Namespace: ns, Job: name, Rows: rows}))
}

// artifactDownload sends one stored file as an attachment. The headers wait for the
// file's first bytes, so that a file that cannot be read is an error page rather
// than an empty download.
func (s *Server) artifactDownload(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, name, file := r.PathValue("namespace"), r.PathValue("name"), r.FormValue("path")
	aw := &attachmentWriter{w: w, st: s.newStream(w), filename: name + "-" + path.Base(file)}
	err := sess.cluster.Artifact(r.Context(), ns, name, file, aw)
	switch {
	case err != nil && !aw.started:
		s.fail(w, r, err)
	case err == nil && !aw.started:
		aw.start() // an empty file
	}
}

// attachmentWriter sets the headers of an attachment on the first write, and writes
// it as a stream.
type attachmentWriter struct {
	w        http.ResponseWriter
	st       *stream
	filename string
	started  bool
}

func (a *attachmentWriter) start() {
	a.started = true
	h := a.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.filename}))
	a.w.WriteHeader(http.StatusOK)
}

func (a *attachmentWriter) Write(p []byte) (int, error) {
	if !a.started {
		a.start()
	}
	return a.st.Write(p)
}
