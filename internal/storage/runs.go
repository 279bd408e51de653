package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The runs of a job. A run is one TFJob object, named by tfjob.RunID of its UID, so
// that a same-name re-submission starts clean:
//
//	<destination>/<namespace>/<job>/<run>/run.json
//	    a tfjob.RunRecord: the job as submitted, written by the front end that created it
//	<destination>/<namespace>/<job>/<run>/end.json
//	    a tfjob.RunEnd: how the job ended, with its lead replica's last progress,
//	    written once it has
//	<destination>/<namespace>/<job>/<run>/<replica>/...
//	    what each replica stores, as layout.go describes under <destination>/<namespace>/<job>/
//
// Agents older than runs stored the replicas right under <destination>/<namespace>/<job>/;
// such a job reads as one run of id LegacyRun.
const (
	// LegacyRun is the run of the replicas stored without a run level.
	LegacyRun = "-"
	// RunRecordName is the run's record, at the run's prefix.
	RunRecordName = "run.json"
	// RunEndName is the record of the run's end, beside RunRecordName.
	RunEndName = "end.json"
)

// RunPrefix is where one run of a job stores; run "" or LegacyRun is the job's prefix,
// where agents older than runs stored.
func RunPrefix(destination URI, namespace, job, run string) URI {
	if run == "" || run == LegacyRun {
		return JobPrefix(destination, namespace, job)
	}
	return destination.Join(namespace, job, run+"/")
}

// IsRunID reports whether s names a run (8 lower-case hex digits) rather than a
// replica (worker-0), which has a dash.
func IsRunID(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// RunName is a run's name parsed: its job's, and the run's, "" for the job's newest.
type RunName struct {
	Job, Run string
}

// ParseRunName parses a run's name, JOB or JOB/RUN, RUN being a run's id or
// LegacyRun. It is the one place a run's name is split, beside the run ids it
// checks, so that every package that takes a run's name, jobs and runs alike, can.
func ParseRunName(name string) (RunName, error) {
	job, run, _ := strings.Cut(name, "/")
	if job == "" || strings.Contains(run, "/") || (run != "" && run != LegacyRun && !IsRunID(run)) {
		return RunName{}, fmt.Errorf("run %q: want JOB or JOB/RUN, RUN being 8 hex digits or %q", name, LegacyRun)
	}
	// JOB becomes part of S3 keys, from a flag or a dashboard URL: only a name a job
	// can have is taken.
	if errs := validation.IsDNS1123Subdomain(job); len(errs) > 0 {
		return RunName{}, fmt.Errorf("run %q: JOB %q is no job's name: %s", name, job, strings.Join(errs, "; "))
	}
	return RunName{Job: job, Run: run}, nil
}

// Marshal encodes a record as stored: indented JSON.
func Marshal(v any) ([]byte, error) {
	return json.MarshalIndent(v, "", "  ")
}

// StoredRun is one run found in a listing: where it stores and which of its records
// exist.
type StoredRun struct {
	Namespace, Job, Run string
	Prefix              URI
	// Record and End are its run.json and end.json; zero when absent.
	Record, End Object
	// Progress are the replicas that stored a progress record, in key order.
	Progress []string
	// Replicas name the replicas that stored something, in key order.
	Replicas []string
	// First and Last are the times of its oldest and newest object.
	First, Last time.Time
}

// Started is when the run started, as far as S3 tells: its record's time, else that of
// its oldest object.
func (r *StoredRun) Started() time.Time {
	if r.Record.URI.Key != "" {
		return r.Record.ModTime
	}
	return r.First
}

// GroupRuns sorts the objects listed under destination into runs,
// <namespace>/<job>/<run>/..., and the legacy <namespace>/<job>/<replica>/... as run
// LegacyRun. Keys of another shape are skipped. Runs come in namespace, job, start order.
func GroupRuns(destination URI, objs []Object) []StoredRun {
	base := destination.Dir().Key
	index := map[[3]string]int{}
	var runs []StoredRun
	for _, obj := range objs {
		rel, ok := strings.CutPrefix(obj.URI.Key, base)
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		if len(parts) < 4 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			continue
		}
		ns, job, run, rest := parts[0], parts[1], parts[2], parts[3:]
		if !IsRunID(run) {
			run, rest = LegacyRun, parts[2:]
		}
		key := [3]string{ns, job, run}
		i, seen := index[key]
		if !seen {
			i = len(runs)
			index[key] = i
			runs = append(runs, StoredRun{Namespace: ns, Job: job, Run: run, Prefix: RunPrefix(destination, ns, job, run), First: obj.ModTime, Last: obj.ModTime})
		}
		r := &runs[i]
		if obj.ModTime.Before(r.First) {
			r.First = obj.ModTime
		}
		if obj.ModTime.After(r.Last) {
			r.Last = obj.ModTime
		}
		switch {
		case len(rest) == 1 && rest[0] == RunRecordName && run != LegacyRun:
			r.Record = obj
		case len(rest) == 1 && rest[0] == RunEndName && run != LegacyRun:
			r.End = obj
		case len(rest) >= 2:
			if n := len(r.Replicas); n == 0 || r.Replicas[n-1] != rest[0] {
				r.Replicas = append(r.Replicas, rest[0])
			}
			if len(rest) == 2 && rest[1] == ProgressName {
				r.Progress = append(r.Progress, rest[0])
			}
		}
	}
	for i := range runs {
		slices.Sort(runs[i].Replicas)
		runs[i].Replicas = slices.Compact(runs[i].Replicas)
	}
	slices.SortStableFunc(runs, func(a, b StoredRun) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Job, b.Job), a.Started().Compare(b.Started()))
	})
	return runs
}

// NewestRun is the run of job that started last, and false if runs holds none of it.
func NewestRun(runs []StoredRun, namespace, job string) (StoredRun, bool) {
	var newest StoredRun
	found := false
	for _, r := range runs {
		if r.Namespace == namespace && r.Job == job && (!found || !r.Started().Before(newest.Started())) {
			newest, found = r, true
		}
	}
	return newest, found
}

// FindRun finds the stored run of a job under destination: run, or the newest one
// when run is ""; failing that, the first of fallbacks that is stored. It lists the
// job's prefix once, however many runs it tries.
func FindRun(ctx context.Context, c *Client, destination URI, namespace, job, run string, fallbacks ...string) (StoredRun, error) {
	prefix := JobPrefix(destination, namespace, job)
	objs, err := c.List(ctx, prefix)
	if err != nil {
		return StoredRun{}, err
	}
	stored := GroupRuns(destination, objs)
	for _, id := range append([]string{run}, fallbacks...) {
		if r, ok := pickRun(stored, namespace, job, id); ok {
			return r, nil
		}
	}
	if run == "" {
		return StoredRun{}, fmt.Errorf("no run of tfjob %s in %s: %w", job, prefix, ErrNotFound)
	}
	return StoredRun{}, fmt.Errorf("no run %s/%s in %s: %w", job, run, prefix, ErrNotFound)
}

// pickRun is run of job among stored, the newest for "", and false if it is not there.
func pickRun(stored []StoredRun, namespace, job, run string) (StoredRun, bool) {
	if run == "" {
		return NewestRun(stored, namespace, job)
	}
	for _, r := range stored {
		if r.Namespace == namespace && r.Job == job && r.Run == run {
			return r, true
		}
	}
	return StoredRun{}, false
}
