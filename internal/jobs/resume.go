package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// CheckResumeFrom makes sure that the earlier job a new one resumes from stored
// something to resume from: the manifest of at least one replica that the new job
// has too (each replica restores from its namesake). If the earlier job still exists,
// its own destination says where it stored.
//
// earlier is JOB, whose newest run is resumed from, or JOB/RUN; a job gone from the
// cluster is looked for under the new job's destination.
func CheckResumeFrom(ctx context.Context, cs *Clients, c *storage.Client, job *tfv1.TFJob, earlier string) error {
	n, err := storage.ParseRunName(earlier)
	if err != nil {
		return fmt.Errorf("--resume-from: %w", err)
	}
	name, run := n.Job, n.Run
	old, err := Get(ctx, cs.Client, job.Namespace, name)
	if err == nil && run != "" && run != tfjob.RunID(string(old.UID)) {
		old, err = nil, &NotFoundError{Namespace: job.Namespace, Name: earlier}
	}
	var notFound *NotFoundError
	switch {
	case err == nil && old.Spec.Artifacts != nil:
		base, err := LocateFiles(ctx, c, old)
		if err != nil {
			return fmt.Errorf("--resume-from %s: %w", earlier, err)
		}
		job.Spec.Artifacts.ResumeFrom = base.String()
	case err == nil:
		return fmt.Errorf("--resume-from %s: that job backs up nothing to S3: it has no spec.artifacts", earlier)
	case !errors.As(err, &notFound):
		return fmt.Errorf("--resume-from %s: %w", earlier, err)
	default:
		dest, err := storage.ParseURI(job.Spec.Artifacts.Destination)
		if err != nil {
			return fmt.Errorf("--resume-from %s: %w", earlier, err)
		}
		stored, err := storage.FindRun(ctx, c, dest.Dir(), job.Namespace, name, run)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			job.Spec.Artifacts.ResumeFrom = storage.RunPrefix(dest.Dir(), job.Namespace, name, run).String()
		case err != nil:
			return fmt.Errorf("--resume-from %s: %w", earlier, err)
		default:
			job.Spec.Artifacts.ResumeFrom = stored.Prefix.String()
		}
	}
	prefix, err := storage.ParseURI(job.Spec.Artifacts.ResumeFrom)
	if err != nil {
		return fmt.Errorf("--resume-from %s: %w", earlier, err)
	}
	replicas := Replicas(job)
	found := make([]bool, len(replicas))
	errs := make([]error, len(replicas))
	Parallel(len(replicas), MaxParallelReads, func(i int) {
		found[i], errs[i] = c.Exists(ctx, prefix.Join(replicas[i], storage.ManifestName))
	})
	for i := range replicas {
		if found[i] {
			return nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("--resume-from %s: looking for its files: %w", earlier, err)
	}
	return fmt.Errorf("--resume-from %s: nothing to resume from: %s holds no manifest of replica %s",
		earlier, prefix, strings.Join(replicas, ", "))
}
