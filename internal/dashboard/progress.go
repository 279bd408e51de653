package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
)

// maxCurveReplicas bounds the replicas whose progress records a job page reads, the
// lead replicas first: each is up to some 100 KB, read again at every refresh.
const maxCurveReplicas = 16

// progressRefresh is how often the job page reads the progress again while the job
// runs; the agents store it at their upload interval, a minute by default.
const progressRefresh = 10 * time.Second

// Progress is what a job's replicas recorded of their training in S3
// (<replica>/progress.json), as the job page shows it.
type Progress struct {
	// Stored is false for a job that stores nothing in S3 (no spec.artifacts).
	Stored bool
	// Replicas are the records found, the lead replicas' first (jobs.ReplicaProgress).
	Replicas []*jobs.JobProgress
	// More tells that the job has replicas beyond the maxCurveReplicas read.
	More bool
	// Lag says how late the figures may be (jobs.ProgressLag).
	Lag string
	// Finished is true once the job succeeded or failed.
	Finished bool
	// Usage is the usage records of the same replicas, those that stored one.
	Usage []replicaUsage
	// UsageErr says why some replicas' usage records could not be read; nil when all
	// were.
	UsageErr error
}

// Progress reads the progress records of a job's replicas from S3. S3 is reached as
// Artifacts reaches it, with the job and its storage Secret read with the user's
// credentials, so that a user who may read neither gets the API server's refusal.
func (d *kubeCluster) Progress(ctx context.Context, namespace, name string) (*Progress, error) {
	job, err := jobs.Get(ctx, d.client, namespace, name)
	if err != nil {
		return nil, err
	}
	p := &Progress{Stored: job.Spec.Artifacts != nil, Lag: jobs.ProgressLag(job),
		Finished: job.Status.State == tfv1.JobSucceeded || job.Status.State == tfv1.JobFailed}
	if !p.Stored {
		return p, nil
	}
	c, _, err := d.storage.ForJob(ctx, d.in(namespace), job)
	if err != nil {
		return nil, err
	}
	// A job whose replicas a controller older than runs started stores under its job's
	// prefix, not its run's; the page asks every progressRefresh, the answer once.
	base, err := d.locations.Locate(ctx, c, job)
	if err != nil {
		return nil, fmt.Errorf("reading the progress of tfjob %s: %w", name, err)
	}
	if p.Replicas, p.More, err = jobs.ReplicaProgress(ctx, c, job, base, maxCurveReplicas); err != nil {
		return nil, fmt.Errorf("reading the progress of tfjob %s: %w", name, err)
	}
	// A usage record that fails to read hides the usage charts' missing lines, not the
	// training curves: the section shows what was read and says why the rest is not.
	if p.Usage, err = d.usage.read(ctx, c, job, base); err != nil {
		p.UsageErr = fmt.Errorf("reading the usage of tfjob %s: %w", name, err)
	}
	return p, nil
}

// usageCacheFor is the longest the job page shows a job's usage records without
// reading them again: they change once per upload interval (a minute by default),
// while the page asks every progressRefresh for up to maxCurveReplicas of them.
const usageCacheFor = 30 * time.Second

// maxUsageCached bounds the jobs a usageCache remembers; past it, it starts afresh.
const maxUsageCached = 512

// usageCache remembers the usage records of the jobs a session looked at, each for
// usageCacheFor or the job's upload interval if shorter. It keeps only records read
// without an error. The zero value is ready; it is safe for concurrent use.
type usageCache struct {
	mu    sync.Mutex
	known map[usageKey]usageEntry
}

// usageKey is a job by its UID and where its replicas store.
type usageKey struct {
	uid  types.UID
	base string
}

type usageEntry struct {
	records []replicaUsage
	until   time.Time
}

// read is readUsage of the job's first maxCurveReplicas replicas under base,
// remembered for a while.
func (u *usageCache) read(ctx context.Context, c *storage.Client, job *tfv1.TFJob, base storage.URI) ([]replicaUsage, error) {
	key, now := usageKey{job.UID, base.String()}, time.Now()
	u.mu.Lock()
	e, ok := u.known[key]
	u.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.records, nil
	}
	records, err := readUsage(ctx, c, job, base, maxCurveReplicas)
	if err != nil || job.UID == "" {
		return records, err
	}
	ttl := usageCacheFor
	if interval := jobs.UploadInterval(job); interval > 0 && interval < ttl {
		ttl = interval
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.known == nil || len(u.known) >= maxUsageCached {
		u.known = map[usageKey]usageEntry{}
	}
	u.known[key] = usageEntry{records: records, until: now.Add(ttl)}
	return records, nil
}

// progressView is the job page's progress section.
type progressView struct {
	Namespace, Name string
	// Error says why nothing is shown; "" when the records were read.
	Error string
	*Progress
	// Lead is the record whose step and loss the section shows (jobs.LeadProgress).
	Lead *jobs.JobProgress
	// LossKey and Loss are the lead record's main scalar; LossKey is "" if it has none.
	LossKey string
	Loss    tfevents.Last
	// Curves is the charts of every replica's series, as JSON (chartsJSON).
	Curves string
	// UsageCurves is the charts of every replica's CPU and memory, as JSON
	// (usageChartsJSON); "" when none has a usage record.
	UsageCurves string
	// UsageNote says that some usage curves are missing, the log saying why; "" when
	// none is.
	UsageNote string
	// Refresh is the hx-trigger that reads the section again, every Every seconds; ""
	// once nothing more will come.
	Refresh string
	Every   int
	// Read is how many replicas' records are read at most (maxCurveReplicas).
	Read int
}

// jobProgress is the job page's progress section alone: the step and loss of the lead
// replica, how fresh they are, and every replica's curves. The page fetches it once
// loaded, then every progressRefresh until the job has finished. An error is the
// section saying why, with the status statusOf gives, and nothing of the records.
func (s *Server) jobProgress(w http.ResponseWriter, r *http.Request, sess *session) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	every := int(progressRefresh.Seconds())
	v := progressView{Namespace: ns, Name: name, Refresh: "every " + strconv.Itoa(every) + "s", Every: every, Read: maxCurveReplicas}
	code := http.StatusOK
	p, err := sess.cluster.Progress(r.Context(), ns, name)
	if err == nil {
		err = v.show(p)
	}
	if err == nil && p.UsageErr != nil {
		fmt.Fprintf(s.opts.Log, "dashboard: %s %s: %v\n", r.Method, r.URL.Path, p.UsageErr)
		v.UsageNote = "Some replicas' usage records could not be read from S3, and their usage curves are missing; the dashboard's log says why. The page tries again."
	}
	if err != nil {
		code = statusOf(err)
		v.Error = s.progressError(r, err, code)
		if code != http.StatusBadGateway {
			v.Refresh = "" // a refusal or a deleted job: asking again changes nothing
		}
	}
	s.renderTemplate(w, code, "job", "progress", s.data(sess, ns, "", v))
}

// show fills the view with p.
func (v *progressView) show(p *Progress) error {
	v.Progress = p
	if p.Finished || !p.Stored {
		v.Refresh = ""
	}
	var err error
	if v.UsageCurves, err = usageChartsJSON(p.Usage); err != nil {
		return err
	}
	if v.Lead = jobs.LeadProgress(p.Replicas); v.Lead == nil {
		return nil
	}
	v.LossKey, v.Loss, _ = v.Lead.Loss()
	lines := make([]curveLine, 0, len(p.Replicas))
	for _, r := range p.Replicas {
		lines = append(lines, curveLine{Label: r.Replica, Series: r.Series})
	}
	v.Curves, err = chartsJSON(lines)
	return err
}

// progressError is what the section says of err. The API server's refusals (of the
// job, of its storage Secret) are shown as they are; any other error, which may name
// the job's bucket and keys, goes to the dashboard's log, and the page says only what
// kind of failure it was.
func (s *Server) progressError(r *http.Request, err error, code int) string {
	var refusal apierrors.APIStatus
	if errors.As(err, &refusal) {
		return err.Error()
	}
	fmt.Fprintf(s.opts.Log, "dashboard: %s %s: %v\n", r.Method, r.URL.Path, err)
	switch code {
	case http.StatusForbidden:
		return "The dashboard may not reach this job's S3 storage."
	case http.StatusNotFound:
		return "The job is gone."
	}
	return "The progress records could not be read from S3; the dashboard's log says why. The page tries again."
}
