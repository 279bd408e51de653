package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tfk8s/tfk8s/internal/jobspec"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// submitData is the submit page: the request as typed (so that an error keeps it),
// and the outcome of a dry run or of a refused creation.
type submitData struct {
	// Mode is "form" or "yaml", the tab shown.
	Mode string
	Req  *SubmitRequest
	// Clone names the job the request was cloned from.
	Clone string
	// Errors are the API server's (or the CLI's) objections, one per field.
	Errors []string
	// DryRun is the job the API server would create.
	DryRun *Submitted
	// Fields are the form's fields, in its order: jobspec's, which the CLI's flags
	// are too.
	Fields []jobspec.Field
}

// submitPage shows the form, empty, or a past job's (?clone=NAME) to edit.
func (s *Server) submitPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns := s.namespaceOf(r, sess)
	d := &submitData{Mode: "form", Req: &SubmitRequest{Namespace: ns, Flags: map[string]string{"workers": "1"}}, Fields: jobspec.FormFields()}
	if r.FormValue("mode") == "yaml" {
		d.Mode = "yaml"
	}
	if name := r.FormValue("clone"); name != "" {
		req, err := sess.cluster.Clone(r.Context(), ns, name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		d.Req, d.Clone = req, name
		// A job the form cannot say (its code, artifacts, a node selector) is cloned as YAML.
		if req.Flags == nil && r.FormValue("mode") != "form" {
			d.Mode = "yaml"
		}
	}
	s.render(w, r, http.StatusOK, "submit", s.data(sess, ns, "Submit a TFJob to "+ns, d))
}

// submit validates the job with a dry run of the API server, or creates it and
// goes to its page; either way the page keeps what was typed and shows every
// objection with its field path. A creation is written to the audit log.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, sess *session) {
	ns := s.namespaceOf(r, sess)
	d := &submitData{Mode: "form", Req: &SubmitRequest{Namespace: ns, Flags: map[string]string{}, DryRun: r.FormValue("action") != "create"},
		Fields: jobspec.FormFields()}
	if r.FormValue("mode") == "yaml" {
		d.Mode, d.Req.YAML = "yaml", r.FormValue("yaml")
	} else {
		for _, f := range d.Fields {
			if v := strings.TrimSpace(r.FormValue(f.Flag)); v != "" && f.IsFlag() {
				d.Req.Flags[f.Flag] = v
			}
		}
		d.Req.Command = r.FormValue("command")
	}
	done, err := sess.cluster.Submit(r.Context(), *d.Req)
	if !d.Req.DryRun {
		job := d.Req.Flags["name"]
		if err == nil {
			job = done.Name
		}
		s.audit(r, sess, "create", "tfjob", ns, job, err)
		if err == nil && done.Warning != "" {
			fmt.Fprintf(s.opts.Log, "warning: tfjob %s/%s: %s\n", ns, job, done.Warning)
		}
	}
	code := http.StatusOK
	switch {
	case err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)):
		s.fail(w, r, err)
		return
	case err != nil:
		d.Errors, code = objections(err), http.StatusUnprocessableEntity
	case !d.Req.DryRun:
		http.Redirect(w, r, "/jobs/"+url.PathEscape(done.Namespace)+"/"+url.PathEscape(done.Name), http.StatusSeeOther)
		return
	default:
		d.DryRun = done
	}
	s.render(w, r, code, "submit", s.data(sess, ns, "Submit a TFJob to "+ns, d))
}

// objections lists what is wrong with a job: each cause the API server gives, with
// its field path, else the error itself (a flag the CLI refused, say).
func objections(err error) []string {
	var status *apierrors.StatusError
	if errors.As(err, &status) && status.ErrStatus.Details != nil && len(status.ErrStatus.Details.Causes) > 0 {
		var out []string
		for _, c := range status.ErrStatus.Details.Causes {
			// The API server names no field ("<nil>") for a remark on the whole object.
			if c.Field != "" && c.Field != "<nil>" && !strings.HasPrefix(c.Message, c.Field) {
				out = append(out, c.Field+": "+c.Message)
			} else {
				out = append(out, c.Message)
			}
		}
		return out
	}
	return []string{err.Error()}
}
