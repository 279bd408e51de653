package jobs

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// WriteRunRecord writes the run record of a job just created, run.json at its run's prefix:
// the job as created, without its status and the fields the API server manages, so that
// tfk8s runs lists it and submit --from-run submits it again once the TFJob is gone.
// A job that backs up nothing to S3 has no record.
func WriteRunRecord(ctx context.Context, c *storage.Client, job *tfv1.TFJob, now time.Time) error {
	if job.Spec.Artifacts == nil || job.UID == "" {
		return nil
	}
	if err := putRecord(ctx, c, ArtifactsBase(job).Join(storage.RunRecordName), NewRunRecord(job, now)); err != nil {
		return fmt.Errorf("writing the run record of tfjob %s: %w", job.Name, err)
	}
	return nil
}

// WriteEndRecord writes the end record of a job that stores in S3, end.json at its run's
// prefix: how it finished, or, deleted before it did, state Deleted at now; with its
// lead replica's progress as the record pod writes it (tfk8s-agent record).
func WriteEndRecord(ctx context.Context, c *storage.Client, job *tfv1.TFJob, now time.Time) error {
	if job.Spec.Artifacts == nil || job.UID == "" {
		return nil
	}
	end := tfjob.EndOf(&job.Status)
	if !ConditionTrue(job, tfv1.JobSucceeded) && !ConditionTrue(job, tfv1.JobFailed) {
		end.State, end.Completed = tfjob.RunDeleted, now.UTC()
		end.Reason, end.Message = tfjob.RunDeleted, "tfk8s delete deleted it before it finished"
	}
	// A progress record that cannot be read leaves the end without it, as in the pod.
	end.Lead, _ = storage.ReadLeadProgress(ctx, c, ArtifactsBase(job))
	if err := putRecord(ctx, c, ArtifactsBase(job).Join(storage.RunEndName), end); err != nil {
		return fmt.Errorf("writing the end record of tfjob %s: %w", job.Name, err)
	}
	return nil
}

// putRecord stores a record as indented JSON.
func putRecord(ctx context.Context, c *storage.Client, u storage.URI, v any) error {
	data, err := storage.Marshal(v)
	if err != nil {
		return err
	}
	return c.PutObject(ctx, u, bytes.NewReader(data), int64(len(data)), storage.UploadOptions{ContentType: "application/json"})
}

// EndRecorded reports whether the controller's record pod wrote the job's end.
func EndRecorded(job *tfv1.TFJob) bool {
	return ConditionTrue(job, tfv1.JobEndRecorded)
}

// NewRunRecord is the run record of a job as created.
func NewRunRecord(job *tfv1.TFJob, now time.Time) tfjob.RunRecord {
	spec := jobspec.NewTFJob()
	spec.Name, spec.Namespace, spec.Labels, spec.Annotations = job.Name, job.Namespace, job.Labels, job.Annotations
	spec.Spec = *job.Spec.DeepCopy()
	return tfjob.RunRecord{
		Namespace: job.Namespace,
		Name:      job.Name,
		UID:       string(job.UID),
		Run:       tfjob.RunID(string(job.UID)),
		Labels:    job.Labels,
		Submitted: cmp.Or(job.CreationTimestamp.Time, now).UTC(),
		Job:       spec,
	}
}
