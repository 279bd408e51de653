package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// CheckResumeFrom makes sure that the earlier job a new one resumes from stored
// something to resume from: the manifest of at least one replica that the new job
// has too (each replica restores from its namesake). If the earlier job still exists,
// its own destination says where it stored.
func CheckResumeFrom(ctx context.Context, cs *Clients, c *storage.Client, job *tfv1.TFJob, earlier string) error {
	old, err := Get(ctx, cs.Client, job.Namespace, earlier)
	var notFound *NotFoundError
	switch {
	case err == nil && old.Spec.Artifacts != nil:
		job.Spec.Artifacts.ResumeFrom = ArtifactsBase(old).String()
	case err == nil:
		return fmt.Errorf("--resume-from %s: that job backs up nothing to S3: it has no spec.artifacts", earlier)
	case !errors.As(err, &notFound):
		return fmt.Errorf("--resume-from %s: %w", earlier, err)
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
