package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// maxCompared bounds the runs of one compare view: one line each per chart, in as many
// colours as the charts' palette has.
const maxCompared = 8

// runRow is a run's line in the Runs page, the columns of tfk8s runs.
type runRow struct {
	Name, Run, State string
	Started          time.Time
	Duration         time.Duration
	Image, Replicas  string
	// Loss is the last value of its main scalar, "-" when it stored none.
	Loss string
	// Live is true while its TFJob exists: the row links to the job's page too.
	Live bool
}

// runsView is the Runs page.
type runsView struct {
	// Since and Selector are the filters as given: a duration, a label selector.
	Since, Selector string
	Rows            []runRow
	// Partial says that some runs' records could not be read.
	Partial bool
	Max     int
	Secret  string
}

// runsPage lists the runs of a namespace, as tfk8s runs does, with a box to tick on
// each for the compare view; ?since=24h keeps those started within a duration and
// ?selector=team=vision those whose job's labels match, as tfk8s runs' --since and -l.
func (s *Server) runsPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns := s.namespaceOf(r, sess)
	v := runsView{Max: maxCompared, Secret: RunsSecret, Since: r.FormValue("since"), Selector: r.FormValue("selector")}
	q, err := runsQuery(ns, v.Since, v.Selector, time.Now())
	if err != nil {
		s.failRuns(w, r, err)
		return
	}
	found, err := sess.cluster.Runs(r.Context(), q)
	if err != nil {
		if found == nil {
			s.failRuns(w, r, err)
			return
		}
		s.logError(r, err)
		v.Partial = true
	}
	now := time.Now()
	for i := range found {
		run := &found[i]
		v.Rows = append(v.Rows, runRow{Name: run.Name, Run: run.Run, State: run.State, Started: run.Started,
			Duration: run.Duration(now), Image: cmp.Or(run.Image, "-"), Replicas: cmp.Or(run.Replicas, "-"),
			Loss: lossOf(run), Live: run.Live})
	}
	s.render(w, r, http.StatusOK, "runs", s.data(sess, ns, "Runs in "+ns, v))
}

// runsQuery makes the query of the Runs page's filters, refusing one that does not
// parse with an error that names it.
func runsQuery(namespace, since, selector string, now time.Time) (runs.Query, error) {
	q := runs.Query{Namespace: namespace}
	if since != "" {
		d, err := time.ParseDuration(since)
		if err != nil || d <= 0 {
			return q, fmt.Errorf("%w: since %q: want a duration such as 24h or 90m", ErrBadRequest, since)
		}
		q.Since = now.Add(-d)
	}
	if selector != "" {
		sel, err := labels.Parse(selector)
		if err != nil {
			return q, fmt.Errorf("%w: selector %q: %w", ErrBadRequest, selector, err)
		}
		q.Selector = sel
	}
	return q, nil
}

// lossOf renders a run's last loss, "-" when it stored none.
func lossOf(r *runs.Run) string {
	if r.Loss == nil {
		return "-"
	}
	return r.Loss.Display()
}

// runView is a run's page.
type runView struct {
	*RunPage
	Duration time.Duration
	// Attempts are every replica's attempts, replica by replica.
	Attempts []attemptRow
	// Usage is what each replica's latest attempt used, replica by replica.
	Usage []usageRow
	// Unread names the replicas whose manifest could not be read.
	Unread []string
	// Lead is the record whose step and scalars the page shows; nil if none.
	Lead *jobs.JobProgress
	// Curves is the charts of every replica's series, as JSON (chartsJSON).
	Curves string
	Read   int
}

// attemptRow is one attempt of a replica, as tfk8s runs show prints it.
type attemptRow struct {
	Replica          string
	Number           int
	Pod              string
	Start            time.Time
	Ran              time.Duration
	ExitCode, Reason string
}

// usageRow is one replica's usage record, as tfk8s runs show prints it.
type usageRow struct {
	Replica                                     string
	Attempt                                     int
	CPUMean, CPUPeak, CPUTime, MemMean, MemPeak string
	Limit                                       string
	OOMKills                                    int
	// GPU is its GPUs' utilisation and memory (storage.Usage.GPUSummary), "-" for none.
	GPU string
	// OOM names the OOM kill, its limit and its peaks; "" if none.
	OOM string
}

// newUsageRow renders a replica's usage record.
func newUsageRow(replica string, u *storage.Usage) usageRow {
	limit := "none"
	if u.MemoryLimitBytes > 0 {
		limit = storage.FormatBytes(u.MemoryLimitBytes)
	}
	return usageRow{Replica: replica, Attempt: u.Attempt, CPUMean: fmt.Sprintf("%.2f", u.CPUCoresMean),
		CPUPeak: fmt.Sprintf("%.2f", u.CPUCoresPeak), CPUTime: fmt.Sprintf("%.1f s", u.CPUSeconds),
		MemMean: storage.FormatBytes(u.MemoryMeanBytes), MemPeak: storage.FormatBytes(u.MemoryPeakBytes),
		Limit: limit, OOMKills: u.OOMKills, GPU: cmp.Or(u.GPUSummary(), "-"), OOM: u.OOMMessage(replica)}
}

// runPage shows one run: its spec in short, its replicas' attempts and its curves.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, job, id := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("run")
	page, err := sess.cluster.Run(r.Context(), ns, job, id)
	if err != nil {
		s.failRuns(w, r, err)
		return
	}
	v := runView{RunPage: page, Duration: page.Duration(time.Now()), Read: maxCurveReplicas, Lead: jobs.LeadProgress(page.Progress)}
	for _, m := range page.Manifests {
		if m.Err != nil {
			s.logError(r, m.Err)
			v.Unread = append(v.Unread, m.Name)
		}
		if m.UsageErr != nil {
			s.logError(r, m.UsageErr)
		}
		if m.Usage != nil {
			v.Usage = append(v.Usage, newUsageRow(m.Name, m.Usage))
		}
		if m.Manifest == nil {
			continue
		}
		for _, a := range m.Manifest.Attempts {
			row := attemptRow{Replica: m.Name, Number: a.Number, Pod: cmp.Or(a.Pod, "-"), Start: a.Start, ExitCode: "-", Reason: cmp.Or(a.Reason, "-")}
			if a.End != nil {
				row.Ran = a.End.Sub(a.Start)
			}
			if a.ExitCode != nil {
				row.ExitCode = fmt.Sprint(*a.ExitCode)
			}
			v.Attempts = append(v.Attempts, row)
		}
	}
	lines := make([]curveLine, 0, len(page.Progress))
	for _, p := range page.Progress {
		lines = append(lines, curveLine{Label: p.Replica, Series: p.Series})
	}
	if v.Curves, err = chartsJSON(lines); err != nil {
		s.failRuns(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "run", s.data(sess, ns, "Run "+job+"/"+id, v))
}

// compareView is the compare view: one chart per scalar, a line per run, and their
// final scalars side by side.
type compareView struct {
	Runs   []string
	Curves string
	// Scalars are the rows of the final scalars' table, by scalar.
	Scalars []scalarRow
}

// scalarRow is one scalar's last value in each run compared, "-" where a run has none.
type scalarRow struct {
	Scalar string
	Values []string
}

// compareRuns overlays the curves of the runs the Runs page's boxes ticked (?run=JOB/RUN,
// at most maxCompared) and sets their final scalars side by side. Each run's curves are
// its lead replica's, whose loss the Runs page shows.
func (s *Server) compareRuns(w http.ResponseWriter, r *http.Request, sess *session) {
	ns := r.PathValue("namespace")
	if err := r.ParseForm(); err != nil {
		s.failRuns(w, r, fmt.Errorf("%w: %w", ErrBadRequest, err))
		return
	}
	names := r.Form["run"]
	if len(names) == 0 || len(names) > maxCompared {
		s.failRuns(w, r, fmt.Errorf("%w: select from 1 to %d runs to compare, not %d", ErrBadRequest, maxCompared, len(names)))
		return
	}
	for _, name := range names {
		n, err := storage.ParseRunName(name)
		job, id := n.Job, n.Run
		if err == nil && id == "" {
			err = fmt.Errorf("run %q: want JOB/RUN", name)
		}
		if err == nil {
			if errs := jobName.check(job); len(errs) > 0 {
				err = fmt.Errorf("run %q: %q is no tfjob name", name, job)
			}
		}
		if err != nil {
			s.failRuns(w, r, fmt.Errorf("%w: %w", ErrNotFound, err))
			return
		}
	}
	// The runs compared alone are read, with their series.
	found, err := sess.cluster.Runs(r.Context(), runs.Query{Namespace: ns, Names: names, Series: true})
	if err != nil && found == nil {
		s.failRuns(w, r, err)
		return
	}
	byName := map[string]*runs.Run{}
	for i := range found {
		byName[found[i].Name+"/"+found[i].Run] = &found[i]
	}
	v := compareView{Runs: names}
	var lines []curveLine
	var records []*tfevents.Progress
	for _, name := range names {
		run, ok := byName[name]
		if !ok {
			s.failRuns(w, r, fmt.Errorf("%w: no run %s in namespace %s", ErrNotFound, name, ns))
			return
		}
		p := &tfevents.Progress{}
		if run.Progress != nil {
			p = run.Progress.Progress
		}
		lines = append(lines, curveLine{Label: name, Series: p.Series})
		records = append(records, p)
	}
	if v.Curves, err = chartsJSON(lines); err != nil {
		s.failRuns(w, r, err)
		return
	}
	v.Scalars = finalScalars(records)
	s.render(w, r, http.StatusOK, "compare", s.data(sess, ns, "Runs compared", v))
}

// finalScalars is the table of the records' last values: a row per scalar, sorted,
// with the step first.
func finalScalars(records []*tfevents.Progress) []scalarRow {
	keys := map[string]bool{}
	step := scalarRow{Scalar: "step"}
	for _, p := range records {
		for k := range p.Scalars {
			keys[k] = true
		}
		step.Values = append(step.Values, fmt.Sprint(p.Step))
	}
	rows := []scalarRow{step}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		row := scalarRow{Scalar: k}
		for _, p := range records {
			value := "-"
			if last, ok := p.Scalars[k]; ok {
				value = last.Value.Display()
			}
			row.Values = append(row.Values, value)
		}
		rows = append(rows, row)
	}
	return rows
}

// failRuns shows an error of the runs' pages. The API server's refusals (of the runs
// Secret), the dashboard's own words and a Kubeflow job's refusal (which names no
// bucket or keys) are shown as they are; any other error, which
// may name the bucket and keys, goes to the dashboard's log, and the page says only
// what kind of failure it was.
func (s *Server) failRuns(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	msg := err.Error()
	var refusal apierrors.APIStatus
	switch {
	case errors.As(err, &refusal) && apierrors.IsNotFound(err):
		msg += fmt.Sprintf("; the runs' S3 settings are read from Secret %s of the namespace", RunsSecret)
	case errors.As(err, &refusal), errors.Is(err, ErrNotFound), errors.Is(err, ErrBadRequest),
		errors.As(err, new(*jobs.KubeflowExtrasError)):
		// the API server's words, the dashboard's own of what was asked, or that a
		// kubeflow.org job keeps no runs
	default:
		s.logError(r, err)
		switch code {
		case http.StatusForbidden:
			msg = "The dashboard may not reach this namespace's S3 storage."
		case http.StatusNotFound:
			msg = "No such run in S3."
		default:
			code, msg = http.StatusBadGateway, "The runs could not be read from S3; the dashboard's log says why."
		}
	}
	s.render(w, r, code, "error", pageData{Title: http.StatusText(code), InCluster: s.opts.InCluster,
		Page: map[string]any{"Code": code, "Message": msg}})
}

// logError writes an error the page does not show to the dashboard's log.
func (s *Server) logError(r *http.Request, err error) {
	fmt.Fprintf(s.opts.Log, "dashboard: %s %s: %v\n", r.Method, r.URL.Path, err)
}
