package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// pageData is what every page's layout shows.
type pageData struct {
	User      string
	InCluster bool
	Namespace string
	Title     string
	// Page holds the page's own data.
	Page any
}

// render executes a page into a buffer first, so that a template error becomes a
// 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, page string, data any) {
	s.renderTemplate(w, code, page, "layout", data)
}

// renderTemplate executes one named template of a page (the layout, or a fragment
// htmx swaps in).
func (s *Server) renderTemplate(w http.ResponseWriter, code int, page, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, name, data); err != nil {
		fmt.Fprintf(s.opts.Log, "dashboard: rendering %s/%s: %v\n", page, name, err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	buf.WriteTo(w)
}

// ErrBadRequest marks an error in what the user asked for, such as a file path
// outside the job's files: the dashboard answers 400.
var ErrBadRequest = errors.New("bad request")

// ErrNotFound marks something asked for that does not exist and is no API object
// (a notebook none of whose objects exists): the dashboard answers 404.
var ErrNotFound = errors.New("not found")

// ErrForbidden marks something the dashboard itself refuses to do for anyone, such as
// reaching an S3 endpoint its admin did not allow: the dashboard answers 403.
var ErrForbidden = errors.New("forbidden")

// statusOf maps an API error to the HTTP status the dashboard answers with: the
// API server's own 401, 403 and 404 pass through.
func statusOf(err error) int {
	switch {
	case apierrors.IsForbidden(err), errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case apierrors.IsUnauthorized(err):
		return http.StatusUnauthorized
	case apierrors.IsNotFound(err), errors.Is(err, storage.ErrNotFound), errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrBadRequest), errors.As(err, new(*jobs.KubeflowExtrasError)):
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// fail shows an error page with the status statusOf gives.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	if code == http.StatusBadGateway {
		fmt.Fprintf(s.opts.Log, "dashboard: %s %s: %v\n", r.Method, r.URL.Path, err)
	}
	if r.Header.Get("HX-Request") != "" {
		http.Error(w, err.Error(), code)
		return
	}
	s.render(w, r, code, "error", pageData{Title: http.StatusText(code), InCluster: s.opts.InCluster,
		Page: map[string]any{"Code": code, "Message": err.Error()}})
}

func (s *Server) home(w http.ResponseWriter, r *http.Request, sess *session) {
	http.Redirect(w, r, "/jobs?namespace="+url.QueryEscape(s.namespaceOf(r, sess)), http.StatusSeeOther)
}

// namespaceOf is the namespace a request asks for, else the session's first.
func (s *Server) namespaceOf(r *http.Request, sess *session) string {
	if ns := r.PathValue("namespace"); ns != "" {
		return ns
	}
	if ns := strings.TrimSpace(r.FormValue("namespace")); ns != "" {
		return ns
	}
	if sess.namespace != "" {
		return sess.namespace
	}
	return s.opts.Namespace
}

// jobsData is the jobs list: the rows that match the search, and the namespaces to
// choose from.
type jobsData struct {
	Namespaces []string
	Query      string
	Rows       []JobRow
	Total      int
}

func (s *Server) jobsData(r *http.Request, sess *session, ns string) (*jobsData, error) {
	rows, err := sess.cluster.Jobs(r.Context(), ns)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(r.FormValue("q")))
	d := &jobsData{Query: q, Total: len(rows)}
	for _, row := range rows {
		if q == "" || strings.Contains(strings.ToLower(row.Name+" "+row.State+" "+row.Image), q) {
			d.Rows = append(d.Rows, row)
		}
	}
	return d, nil
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	s.showJobs(w, r, sess, "layout")
}

// jobsTable is the table alone, which the page fetches again every few seconds and
// on every change of the search.
func (s *Server) jobsTable(w http.ResponseWriter, r *http.Request, sess *session) {
	s.showJobs(w, r, sess, "jobs-table")
}

// showJobs renders the jobs page, or its table alone; the page also offers the
// namespaces the user may list.
func (s *Server) showJobs(w http.ResponseWriter, r *http.Request, sess *session, name string) {
	ns := s.namespaceOf(r, sess)
	d, err := s.jobsData(r, sess, ns)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if name == "layout" {
		if names, err := sess.cluster.Namespaces(r.Context()); err == nil {
			d.Namespaces = names
			if !slices.Contains(names, ns) {
				d.Namespaces = append(d.Namespaces, ns)
			}
		}
	}
	s.renderTemplate(w, http.StatusOK, "jobs", name, s.data(sess, ns, "Jobs in "+ns, d))
}

// gpus is a job's GPU column: allocated/requested, "-" for a job without GPUs.
func gpus(allocated, requested int64) string {
	if allocated == 0 && requested == 0 {
		return "-"
	}
	return strconv.FormatInt(allocated, 10) + "/" + strconv.FormatInt(requested, 10)
}

func (s *Server) data(sess *session, ns, title string, page any) pageData {
	return pageData{User: sess.user, InCluster: s.opts.InCluster, Namespace: ns, Title: title, Page: page}
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request, sess *session) {
	s.showJob(w, r, sess, "layout")
}

// jobStatus is the live part of the job page alone: state, replicas, conditions and
// events.
func (s *Server) jobStatus(w http.ResponseWriter, r *http.Request, sess *session) {
	s.showJob(w, r, sess, "job-status")
}

func (s *Server) showJob(w http.ResponseWriter, r *http.Request, sess *session, name string) {
	ns := r.PathValue("namespace")
	page, err := sess.cluster.Job(r.Context(), ns, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderTemplate(w, http.StatusOK, "job", name, s.data(sess, ns, "TFJob "+page.Job.Name, page))
}

// actions are the mutations a job page offers, with the words of their confirmation.
var actions = map[string]struct{ verb, done string }{
	"suspend": {"Suspend", "suspended: its pods are deleted, its status kept"},
	"resume":  {"Resume", "resumed: its pods are created again"},
	"delete":  {"Delete", "deleted, with its pods; its artifacts and logs stay in S3"},
	"tensorboard": {"Re-open the TensorBoard of", "kept with its TensorBoard for the TensorBoard's time to live from now, " +
		"and a deleted TensorBoard created again"},
}

// confirmPage asks before a mutation; the mutation itself is the form's POST.
func (s *Server) confirmPage(w http.ResponseWriter, r *http.Request, sess *session) {
	action, ok := actions[r.PathValue("action")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s.render(w, r, http.StatusOK, "confirm", s.data(sess, ns, action.verb+" "+name, map[string]string{
		"Action": r.PathValue("action"), "Verb": action.verb, "Done": action.done, "Name": name, "Namespace": ns,
	}))
}

// act suspends, resumes or deletes a job as the session's user, and writes an audit
// line whatever the outcome.
func (s *Server) act(w http.ResponseWriter, r *http.Request, sess *session) {
	action := r.PathValue("action")
	if _, ok := actions[action]; !ok {
		http.NotFound(w, r)
		return
	}
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	var err error
	switch action {
	case "suspend", "resume":
		err = sess.cluster.Suspend(r.Context(), ns, name, action == "suspend")
	case "delete":
		err = sess.cluster.Delete(r.Context(), ns, name)
	case "tensorboard":
		err = sess.cluster.RequestTensorBoard(r.Context(), ns, name)
	}
	s.audit(r, sess, action, "tfjob", ns, name, err)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	target := "/jobs/" + url.PathEscape(ns) + "/" + url.PathEscape(name)
	switch {
	case action == "delete":
		target = "/jobs?namespace=" + url.QueryEscape(ns)
	case r.FormValue("back") == "workspace":
		target = "/workspace?namespace=" + url.QueryEscape(ns)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// audit writes the audit line of a mutation, whatever its outcome: who did what to
// which object, from where.
func (s *Server) audit(r *http.Request, sess *session, action, kind, ns, name string, err error) {
	result := "ok"
	if err != nil {
		result = "error: " + err.Error()
	}
	fmt.Fprintf(s.opts.Log, "audit: user=%q action=%s %s=%s/%s remote=%s result=%q\n", sess.user, action, kind, ns, name, r.RemoteAddr, result)
}
