package jobs

import (
	"bytes"
	"context"
	"encoding/json"
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
	var buf bytes.Buffer
	u := replica.Join(storage.ProgressName)
	if _, err := c.Download(ctx, u, &buf); errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	p := &tfevents.Progress{}
	if err := json.Unmarshal(buf.Bytes(), p); err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	return p, nil
}

// leadReplicas are the replicas whose summaries stand for the job's, in order: the
// one that drives training (which Keras' callback writes from), else the first worker.
var leadReplicas = []string{
	tfjob.ReplicaName(tfv1.ReplicaTypeChief, 0),
	tfjob.ReplicaName(tfv1.ReplicaTypeMaster, 0),
	tfjob.ReplicaName(tfv1.ReplicaTypeWorker, 0),
}

// Progress returns the progress of a job that stores its artifacts: the chief's (or
// master's) record, else worker-0's, else the one updated last of its other replicas'.
// It reads the lead replicas' records, and the others' only when these have none, a
// few at a time. It is nil, without error, when no replica stored one yet.
func Progress(ctx context.Context, c *storage.Client, job *tfv1.TFJob) (*JobProgress, error) {
	if job.Spec.Artifacts == nil {
		return nil, nil
	}
	var lead, others []string
	for _, r := range Replicas(job) {
		if slices.Contains(leadReplicas, r) {
			lead = append(lead, r)
		} else {
			others = append(others, r)
		}
	}
	slices.SortFunc(lead, func(a, b string) int { return slices.Index(leadReplicas, a) - slices.Index(leadReplicas, b) })
	found, err := readProgresses(ctx, c, ArtifactsBase(job), lead)
	if len(found) > 0 {
		return found[0], nil // the first lead replica's in order
	}
	found, oerr := readProgresses(ctx, c, ArtifactsBase(job), others)
	if len(found) == 0 {
		return nil, errors.Join(err, oerr)
	}
	newest := slices.MaxFunc(found, func(a, b *JobProgress) int { return a.Updated.Compare(b.Updated) })
	return newest, nil
}

// readProgresses reads the records of replicas under base, a few at a time, and
// returns those found, in the replicas' order.
func readProgresses(ctx context.Context, c *storage.Client, base storage.URI, replicas []string) ([]*JobProgress, error) {
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
