package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// workspaceData is the workspace page: the namespace's notebooks and TensorBoards,
// and the notebook form as typed, with what was wrong with it.
type workspaceData struct {
	*Workspace
	Form NotebookRequest
	// Errors are the objections to the notebook asked for, each naming its field.
	Errors []string
}

// workspacePage shows the notebooks and TensorBoards of a namespace, the form that
// starts a notebook, and the commands that open them from the user's machine.
func (s *Server) workspacePage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns := s.namespaceOf(r, sess)
	s.showWorkspace(w, r, sess, http.StatusOK, &workspaceData{Form: NotebookRequest{Namespace: ns}})
}

// showWorkspace renders the workspace page of d.Form's namespace.
func (s *Server) showWorkspace(w http.ResponseWriter, r *http.Request, sess *session, code int, d *workspaceData) {
	ns := d.Form.Namespace
	ws, err := sess.cluster.Workspace(r.Context(), ns)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Workspace = ws
	s.render(w, r, code, "workspace", s.data(sess, ns, "Workspace "+ns, d))
}

// startNotebook starts a notebook as the session's user, as tfk8s notebook start
// does, and goes back to the workspace, where its row shows it starting. A refusal
// of RBAC is an error page; any other objection is shown above the form, which keeps
// what was typed. Either way the attempt is audited.
func (s *Server) startNotebook(w http.ResponseWriter, r *http.Request, sess *session) {
	req := NotebookRequest{
		Namespace: r.PathValue("namespace"),
		Name:      strings.TrimSpace(r.FormValue("name")),
		Image:     strings.TrimSpace(r.FormValue("image")),
		CPU:       strings.TrimSpace(r.FormValue("cpu")),
		Memory:    strings.TrimSpace(r.FormValue("memory")),
	}
	err := sess.cluster.StartNotebook(r.Context(), req)
	s.audit(r, sess, "start", "notebook", req.Namespace, req.Name, err)
	switch {
	case err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)):
		s.fail(w, r, err)
	case err != nil:
		s.showWorkspace(w, r, sess, http.StatusUnprocessableEntity, &workspaceData{Form: req, Errors: objections(err)})
	default:
		http.Redirect(w, r, "/workspace?namespace="+url.QueryEscape(req.Namespace), http.StatusSeeOther)
	}
}

// confirmStopPage asks before a notebook is stopped; the stop itself is the form's
// POST.
func (s *Server) confirmStopPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s.render(w, r, http.StatusOK, "notebookstop", s.data(sess, ns, "Stop notebook "+name, map[string]string{"Name": name, "Namespace": ns}))
}

// stopNotebook stops a notebook as the session's user, as tfk8s notebook stop does
// (with --delete-home when the box was ticked), audited. The box is read from the
// form's body only: a query in the form's action is no tick.
func (s *Server) stopNotebook(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	err := sess.cluster.StopNotebook(r.Context(), ns, name, r.PostFormValue("delete-home") == "true")
	s.audit(r, sess, "stop", "notebook", ns, name, err)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/workspace?namespace="+url.QueryEscape(ns), http.StatusSeeOther)
}
