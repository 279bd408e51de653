package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// replicaAttempts are the attempts one replica's agent recorded in S3.
type replicaAttempts struct {
	replica  string
	attempts []storage.Attempt
	// err says why they could not be read; nil when the replica stored none yet.
	err error
}

// readStored reads what describe shows of a job from S3: nothing for a job that stores
// nothing there.
func (o *rootOptions) readStored(ctx context.Context, cs *clients, job *tfv1.TFJob) fromS3 {
	if job.Spec.Artifacts == nil {
		return fromS3{}
	}
	c, _, err := o.storage().ForJob(ctx, cs, job)
	if err != nil {
		err = fmt.Errorf("reading from S3: %w", err)
		return fromS3{err: err, progressErr: err}
	}
	base, err := jobs.LocateFiles(ctx, c, job)
	if err != nil {
		err = fmt.Errorf("reading from S3: %w", err)
		return fromS3{err: err, progressErr: err}
	}
	var s fromS3
	s.replicas = readAttempts(ctx, c, job, base)
	s.progress, s.progressErr = jobs.Progress(ctx, c, job, base)
	return s
}

// readAttempts reads the attempts of every replica of the job from the replicas'
// manifests under base, the job's run prefix: one read per replica, a few at a time.
func readAttempts(ctx context.Context, c *storage.Client, job *tfv1.TFJob, base storage.URI) []replicaAttempts {
	replicas := jobs.Replicas(job)
	out := make([]replicaAttempts, len(replicas))
	jobs.Parallel(len(replicas), jobs.MaxParallelReads, func(i int) {
		out[i].replica = replicas[i]
		m, err := storage.ReadManifest(ctx, c, base.Join(replicas[i]+"/"))
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			out[i].err = err
		default:
			out[i].attempts = slices.SortedFunc(slices.Values(m.Attempts), func(a, b storage.Attempt) int { return cmp.Compare(a.Number, b.Number) })
		}
	})
	return out
}

// describeAttempts writes the attempts of each replica; err, if reading them failed
// as a whole. Nothing is written for a job that stores nothing in S3.
func describeAttempts(w io.Writer, all []replicaAttempts, err error, now time.Time) error {
	if all == nil && err == nil {
		return nil
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "Attempts:")
	if err != nil {
		fmt.Fprintf(tw, "  <unknown: %v>\n", err)
		return tw.Flush()
	}
	fmt.Fprintln(tw, "  REPLICA\tATTEMPT\tPOD\tSTARTED\tENDED\tEXIT CODE\tREASON")
	for _, r := range all {
		switch {
		case r.err != nil:
			fmt.Fprintf(tw, "  %s\t-\t-\t-\t-\t-\t<unknown: %v>\n", r.replica, r.err)
		case len(r.attempts) == 0:
			fmt.Fprintf(tw, "  %s\t-\t-\t-\t-\t-\t<none stored yet>\n", r.replica)
		}
		for i, a := range r.attempts {
			ended, exit := "<running>", "-"
			switch {
			case a.End != nil:
				ended = ago(*a.End, now)
			case i < len(r.attempts)-1:
				ended = "<unknown>" // ended before it could record how
			}
			if a.ExitCode != nil {
				exit = strconv.Itoa(*a.ExitCode)
			}
			reason := a.Reason
			if a.Message != "" {
				reason += ": " + a.Message
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.replica, a.Number, orNone(a.Pod), ago(a.Start, now), ended, exit, orNone(truncate(reason, 120)))
		}
	}
	return tw.Flush()
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ago renders how long ago t was, "<unknown>" if zero.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return humanSince(t, now) + " ago"
}
