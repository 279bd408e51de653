// Package runs reads the runs of TFJobs stored in S3, whether or not their TFJob still
// exists: what tfk8s runs lists, shows and deletes. A run is one TFJob object; the
// layout of what it stores is storage's (runs.go there).
package runs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// MaxParallelReads bounds the records read at once: one listing names a thousand runs,
// whose records are small; minio-go keeps 16 idle connections to a host, and more
// readers would open and close connections.
const MaxParallelReads = 16

// StateUnknown is the state of a run whose TFJob is gone without its end recorded;
// the others are the TFJob's own (Running, Succeeded, ...) and tfjob.RunDeleted.
const StateUnknown = "Unknown"

// Run is one run as tfk8s runs shows it.
type Run struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Run is the run's id, storage.LegacyRun for files stored before runs.
	Run   string `json:"run"`
	UID   string `json:"uid,omitempty"`
	State string `json:"state"`
	// Reason and Message say why it ended, as its end record or its TFJob has it.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Started is when it was submitted (its record), else its oldest file's time;
	// Ended when it finished, nil while it runs or when nobody recorded it.
	Started time.Time  `json:"started"`
	Ended   *time.Time `json:"ended,omitempty"`
	Image   string     `json:"image,omitempty"`
	// Replicas counts the replicas by type: "ps:1,worker:2".
	Replicas string            `json:"replicas"`
	Labels   map[string]string `json:"labels,omitempty"`
	// Step is the highest step of its lead replica's summaries, and Loss the last
	// value of their main scalar (tfevents.Progress.Loss); nil when none was stored.
	Step *int64          `json:"step,omitempty"`
	Loss *tfevents.Value `json:"loss,omitempty"`
	// Live is true while its TFJob exists.
	Live bool `json:"live"`
	// Prefix is where it stores.
	Prefix string `json:"prefix"`

	// Job is the job as submitted (its record), or its TFJob while it exists; nil for
	// a run of neither.
	Job *tfv1.TFJob `json:"-"`
	// Stored is what the listing found of it.
	Stored storage.StoredRun `json:"-"`
	// End is its end record, if any.
	End *tfjob.RunEnd `json:"-"`
	// Progress is its lead replica's progress record, if any.
	Progress *jobs.JobProgress `json:"-"`
}

// Query picks the runs to list.
type Query struct {
	// Namespace is the namespace listed; "" lists every namespace.
	Namespace string
	// Since, if set, keeps the runs started since then.
	Since time.Time
	// Selector, if set, keeps the runs whose job's labels it matches.
	Selector labels.Selector
	// Names, if set, keeps these runs alone (JOB/RUN), whose records alone are read.
	Names []string
	// Series reads each run's lead progress record whole, with the scalars' series,
	// even for a run whose end record holds its last values (tfjob.RunEnd.Lead).
	Series bool
	// Cache, if set, holds the records read before and keeps those read now.
	Cache *Cache
}

// keeps reports whether the query keeps a run of that name, as far as Names tells.
func (q Query) keeps(job, run string) bool {
	return len(q.Names) == 0 || slices.Contains(q.Names, job+"/"+run)
}

// List lists the runs stored under destination: one listing of the namespace's
// prefix without delimiter, then each run's run.json and end.json (unless q.Cache
// holds them), MaxParallelReads at a time, and its lead replica's progress.json
// unless its end.json holds that record's last values. So a finished run costs two
// GETs at first and none once cached; a running one, one more. live are the TFJobs
// that exist: a run of one of them (same UID) takes its state from it, and one that
// stored nothing yet is listed from it alone. Runs come by namespace, name and start.
func List(ctx context.Context, c *storage.Client, destination storage.URI, live []tfv1.TFJob, q Query) ([]Run, error) {
	objs, err := listStored(ctx, c, destination, q)
	if err != nil {
		return nil, fmt.Errorf("listing the runs: %w", err)
	}
	stored := slices.DeleteFunc(storage.GroupRuns(destination, objs), func(r storage.StoredRun) bool {
		return (!q.Since.IsZero() && r.Started().Before(q.Since)) || !q.keeps(r.Job, r.Run)
	})
	runs := make([]Run, len(stored))
	errs := make([]error, len(stored))
	jobs.Parallel(len(stored), MaxParallelReads, func(i int) {
		runs[i], errs[i] = read(ctx, c, q, stored[i])
	})
	runs = mergeLive(runs, live, destination, q)
	// The listing's times kept the runs whose record was written since; the records
	// say when each was submitted.
	runs = slices.DeleteFunc(runs, func(r Run) bool {
		return (q.Selector != nil && !q.Selector.Matches(labels.Set(r.Labels))) || (!q.Since.IsZero() && r.Started.Before(q.Since)) ||
			!q.keeps(r.Name, r.Run)
	})
	slices.SortStableFunc(runs, func(a, b Run) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), a.Started.Compare(b.Started))
	})
	return runs, errors.Join(errs...)
}

// listStored lists the objects of the runs q asks for: those of the named runs alone
// when q names them in one namespace (the compare view's at most eight), else the
// whole namespace's, or every namespace's.
func listStored(ctx context.Context, c *storage.Client, destination storage.URI, q Query) ([]storage.Object, error) {
	if len(q.Names) == 0 || q.Namespace == "" {
		prefix := destination.Dir()
		if q.Namespace != "" {
			prefix = prefix.Join(q.Namespace + "/")
		}
		return c.List(ctx, prefix)
	}
	prefixes := namedPrefixes(destination, q.Namespace, q.Names)
	found := make([][]storage.Object, len(prefixes))
	errs := make([]error, len(prefixes))
	jobs.Parallel(len(prefixes), MaxParallelReads, func(i int) {
		found[i], errs[i] = c.List(ctx, prefixes[i])
	})
	return slices.Concat(found...), errors.Join(errs...)
}

// namedPrefixes are the prefixes of the runs named JOB/RUN in namespace, each listed
// once: a legacy run's prefix is its job's, which holds the job's other runs.
func namedPrefixes(destination storage.URI, namespace string, names []string) []storage.URI {
	var keys []string
	for _, name := range names {
		job, run, _ := strings.Cut(name, "/")
		keys = append(keys, storage.RunPrefix(destination, namespace, job, run).Key)
	}
	slices.Sort(keys)
	var prefixes []storage.URI
	for _, k := range slices.Compact(keys) {
		if n := len(prefixes); n > 0 && strings.HasPrefix(k, prefixes[n-1].Key) {
			continue
		}
		prefixes = append(prefixes, storage.URI{Bucket: destination.Bucket, Key: k})
	}
	return prefixes
}

// read reads a stored run's records, run.json and end.json from q.Cache if it holds
// them, and its lead progress.json if it must, and makes its row. A record that cannot
// be read leaves its fields empty and is returned as an error beside the row.
func read(ctx context.Context, c *storage.Client, q Query, s storage.StoredRun) (Run, error) {
	cache := q.Cache
	r := Run{Namespace: s.Namespace, Name: s.Job, Run: s.Run, State: StateUnknown, Started: s.Started(), Prefix: s.Prefix.String(), Stored: s}
	var errs []error
	if s.Record.URI.Key != "" {
		rec := &tfjob.RunRecord{}
		if err := readRecord(ctx, c, cache, s.Record, rec); err != nil {
			errs = append(errs, err)
		} else {
			r.UID, r.Labels, r.Started, r.Job = rec.UID, rec.Labels, rec.Submitted, rec.Job
		}
	}
	if s.End.URI.Key != "" {
		end := &tfjob.RunEnd{}
		if err := readRecord(ctx, c, cache, s.End, end); err != nil {
			errs = append(errs, err)
		} else {
			r.End = end
			r.State, r.Reason, r.Message, r.Ended = end.State, end.Reason, end.Message, &end.Completed
		}
	}
	if r.End != nil && r.End.Lead != nil && !q.Series {
		r.setProgress(r.End.Lead.Replica, &r.End.Lead.Progress)
	} else if replica, ok := jobs.LeadReplica(s.Progress); ok {
		p, err := jobs.ReadProgress(ctx, c, s.Prefix.Join(replica+"/"))
		errs = append(errs, err)
		r.setProgress(replica, p)
	}
	r.describe()
	return r, errors.Join(errs...)
}

// setProgress takes the step and the main scalar from a replica's progress record.
func (r *Run) setProgress(replica string, p *tfevents.Progress) {
	if p == nil {
		return
	}
	r.Progress = &jobs.JobProgress{Replica: replica, Progress: p}
	r.Step = &p.Step
	if _, last, ok := p.Loss(); ok {
		r.Loss = &last.Value
	}
}

// mergeLive gives the runs of existing TFJobs their live state, and adds the runs of
// those that stored nothing yet but will under destination.
func mergeLive(runs []Run, live []tfv1.TFJob, destination storage.URI, q Query) []Run {
	byRun := map[[3]string]int{}
	for i, r := range runs {
		byRun[[3]string{r.Namespace, r.Name, r.Run}] = i
	}
	for i := range live {
		job := &live[i]
		if q.Namespace != "" && job.Namespace != q.Namespace {
			continue
		}
		id := tfjob.RunID(string(job.UID))
		at, found := byRun[[3]string{job.Namespace, job.Name, id}]
		if !found {
			// Replicas of an older controller store without a run level.
			at, found = byRun[[3]string{job.Namespace, job.Name, storage.LegacyRun}]
		}
		switch {
		case found:
			runs[at].fromLive(job)
		case job.Spec.Artifacts != nil && storesUnder(job, destination) &&
			(q.Since.IsZero() || !job.CreationTimestamp.Time.Before(q.Since)):
			r := Run{Namespace: job.Namespace, Name: job.Name, Run: id, Started: job.CreationTimestamp.Time, Prefix: jobs.ArtifactsBase(job).String()}
			r.fromLive(job)
			runs = append(runs, r)
		}
	}
	return runs
}

// storesUnder reports whether the job's destination is destination.
func storesUnder(job *tfv1.TFJob, destination storage.URI) bool {
	dest, err := storage.ParseURI(job.Spec.Artifacts.Destination)
	return err == nil && dest.Dir() == destination.Dir()
}

// fromLive takes the run's state from its existing TFJob.
func (r *Run) fromLive(job *tfv1.TFJob) {
	r.Live, r.UID, r.Labels, r.Job = true, string(job.UID), job.Labels, job
	r.State = cmp.Or(string(job.Status.State), string(tfv1.JobCreated))
	r.Reason, r.Message, r.Ended = "", "", nil
	if t := job.Status.CompletionTime; t != nil {
		r.Ended = &t.Time
	}
	for _, c := range job.Status.Conditions {
		if c.Type == string(job.Status.State) {
			r.Reason, r.Message = c.Reason, c.Message
		}
	}
	r.describe()
}

// describe fills the image and the replica counts from the job, else from the
// replicas that stored something.
func (r *Run) describe() {
	if r.Job != nil {
		r.Image = jobs.Image(r.Job)
		var counts []string
		for _, rt := range tfv1.ReplicaTypes {
			if spec := r.Job.Spec.TFReplicaSpecs[rt]; spec != nil {
				counts = append(counts, tfjob.TaskType(rt)+":"+strconv.Itoa(int(tfjob.Replicas(spec))))
			}
		}
		r.Replicas = strings.Join(counts, ",")
		return
	}
	count := map[string]int{}
	var types []string
	replicas := slices.SortedFunc(slices.Values(r.Stored.Replicas), jobs.CompareReplicas)
	for _, name := range replicas {
		typ, _, _ := strings.Cut(name, "-")
		if count[typ] == 0 {
			types = append(types, typ)
		}
		count[typ]++
	}
	counts := make([]string, len(types))
	for i, typ := range types {
		counts[i] = typ + ":" + strconv.Itoa(count[typ])
	}
	r.Replicas = strings.Join(counts, ",")
}

// Running is whether the run has not ended: its TFJob exists (Live) and neither its
// state nor an end record says it finished. A job that succeeded or failed and is not
// yet deleted has ended.
func (r *Run) Running() bool {
	ended := r.End != nil || r.State == string(tfv1.JobSucceeded) || r.State == string(tfv1.JobFailed)
	return r.Live && !ended
}

// Duration is how long the run ran: until its end, or until now while its job runs;
// 0 when unknown.
func (r *Run) Duration(now time.Time) time.Duration {
	switch {
	case r.Started.IsZero():
		return 0
	case r.Ended != nil:
		return r.Ended.Sub(r.Started)
	case r.Live:
		return now.Sub(r.Started)
	}
	return 0
}

// readRecord reads the JSON object obj into v, from cache if it holds it.
func readRecord(ctx context.Context, c *storage.Client, cache *Cache, obj storage.Object, v any) error {
	body, ok := cache.get(obj)
	if !ok {
		var buf bytes.Buffer
		if _, err := c.Download(ctx, obj.URI, &buf); err != nil {
			return fmt.Errorf("reading %s: %w", obj.URI, err)
		}
		body = buf.Bytes()
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("reading %s: %w", obj.URI, err)
	}
	if !ok {
		cache.put(obj, body)
	}
	return nil
}
