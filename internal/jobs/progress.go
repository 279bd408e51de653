package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfevents"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// JobProgress is how far a job has got, as one of its replicas' agents recorded it
// from the summaries it uploaded.
type JobProgress struct {
	// Replica names the replica whose record it is (chief-0).
	Replica string
	*tfevents.Progress
}

// ReadProgress reads the progress record stored under a replica's prefix; nil, and no
// error, when there is none yet.
func ReadProgress(ctx context.Context, c *storage.Client, replica storage.URI) (*tfevents.Progress, error) {
	p := &tfevents.Progress{}
	found, err := c.GetJSON(ctx, replica.Join(storage.ProgressName), p)
	if !found {
		return nil, err
	}
	return p, nil
}

// leadReplicas are the replicas whose summaries stand for the job's (tfjob.LeadReplicas).
var leadReplicas = tfjob.LeadReplicas

// LeadReplica is the replica of replicas whose progress stands for the job's: the
// first lead replica among them, else the first of them; false when there is none.
func LeadReplica(replicas []string) (string, bool) {
	for _, lead := range leadReplicas {
		if slices.Contains(replicas, lead) {
			return lead, true
		}
	}
	if len(replicas) == 0 {
		return "", false
	}
	return replicas[0], true
}

// Progress returns the progress of a job that stores its artifacts from its replicas'
// records under base, its run's prefix (ArtifactsBase, or LocateFiles for a job that
// may predate runs): the chief's (or master's) record, else worker-0's, else the one
// updated last of its other replicas'. It reads the lead replicas' records, and the
// others' only when these have none, a few at a time. It is nil, without error, when
// no replica stored one yet.
func Progress(ctx context.Context, c *storage.Client, job *tfv1.TFJob, base storage.URI) (*JobProgress, error) {
	if job.Spec.Artifacts == nil {
		return nil, nil
	}
	lead, others := leadFirst(job)
	found, err := ReadProgresses(ctx, c, base, lead)
	if len(found) > 0 {
		return found[0], nil // the first lead replica's in order
	}
	found, oerr := ReadProgresses(ctx, c, base, others)
	if len(found) == 0 {
		return nil, errors.Join(err, oerr)
	}
	return LeadProgress(found), nil
}

// ReplicaProgress returns the records of a job's replicas that stored one under base
// (as Progress takes it), the lead replicas' first in order, then the others' in the
// job's order. It reads at most limit replicas' records, a few at a time, so that a
// job of many workers costs a bounded number of reads; more tells that the job has
// replicas beyond them.
func ReplicaProgress(ctx context.Context, c *storage.Client, job *tfv1.TFJob, base storage.URI, limit int) (found []*JobProgress, more bool, err error) {
	if job.Spec.Artifacts == nil {
		return nil, false, nil
	}
	lead, others := leadFirst(job)
	replicas := append(lead, others...)
	found, err = ReadProgresses(ctx, c, base, replicas[:min(limit, len(replicas))])
	return found, len(replicas) > limit, err
}

// LeadProgress picks, among records in ReplicaProgress's order, the one that stands
// for the job as Progress does: the first lead replica's, else the one updated last;
// nil if there is none.
func LeadProgress(found []*JobProgress) *JobProgress {
	if len(found) == 0 {
		return nil
	}
	if slices.Contains(leadReplicas, found[0].Replica) {
		return found[0]
	}
	return slices.MaxFunc(found, func(a, b *JobProgress) int { return a.Updated.Compare(b.Updated) })
}

// leadFirst splits a job's replicas into its lead replicas, in leadReplicas' order,
// and the others, in the job's order.
func leadFirst(job *tfv1.TFJob) (lead, others []string) {
	for _, r := range Replicas(job) {
		if slices.Contains(leadReplicas, r) {
			lead = append(lead, r)
		} else {
			others = append(others, r)
		}
	}
	slices.SortFunc(lead, func(a, b string) int { return slices.Index(leadReplicas, a) - slices.Index(leadReplicas, b) })
	return lead, others
}

// ReadProgresses reads the records of replicas under base (a run's prefix), a few
// at a time, and returns those found, in the replicas' order.
func ReadProgresses(ctx context.Context, c *storage.Client, base storage.URI, replicas []string) ([]*JobProgress, error) {
	found := make([]*JobProgress, len(replicas))
	errs := make([]error, len(replicas))
	Parallel(len(replicas), MaxParallelReads, func(i int) {
		p, err := ReadProgress(ctx, c, base.Join(replicas[i]+"/"))
		if p != nil {
			found[i] = &JobProgress{Replica: replicas[i], Progress: p}
		}
		errs[i] = err
	})
	return slices.DeleteFunc(found, func(p *JobProgress) bool { return p == nil }), errors.Join(errs...)
}

// UploadInterval is how often a job's agents upload, and so refresh its progress: its
// artifacts interval, 0 when they upload only at the end.
func UploadInterval(job *tfv1.TFJob) time.Duration {
	if a := job.Spec.Artifacts; a != nil && a.Interval != nil {
		return a.Interval.Duration
	}
	return tfjob.DefaultArtifactsInterval
}

// ProgressLag says how late a job's progress figures may be: its agents read the
// summaries as they upload them, and TensorBoard's mirror is not in their way.
func ProgressLag(job *tfv1.TFJob) string {
	interval := UploadInterval(job)
	if interval == 0 {
		return "the agents upload the summaries only as each replica ends"
	}
	return fmt.Sprintf("the agents upload the summaries every %v: the figures lag training by up to that, plus the trainer's flush", interval)
}
