package jobs

import (
	"context"
	"fmt"
	"strings"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// LocateFiles is where a live job's replicas store: its run's prefix, or, for a job
// whose replicas were started by a controller older than runs and stored nothing
// there, the job's own prefix where they stored instead. It lists one key per
// replica until one is found, the run's first.
func LocateFiles(ctx context.Context, c *storage.Client, job *tfv1.TFJob) (storage.URI, error) {
	base := ArtifactsBase(job)
	dest, err := storage.ParseURI(job.Spec.Artifacts.Destination)
	if err != nil {
		return base, nil
	}
	legacy := storage.JobPrefix(dest, job.Namespace, job.Name)
	if base == legacy {
		return base, nil
	}
	for _, prefix := range []storage.URI{base, legacy} {
		for _, replica := range Replicas(job) {
			if found, err := c.Any(ctx, prefix.Join(replica+"/")); found || err != nil {
				return prefix, err
			}
		}
	}
	return base, nil
}

// SplitRun splits a run's name, JOB or JOB/RUN, into the job and the run; the run is
// "" for JOB alone (its newest run).
func SplitRun(name string) (job, run string, err error) {
	job, run, _ = strings.Cut(name, "/")
	if job == "" || strings.Contains(run, "/") || (run != "" && run != storage.LegacyRun && !storage.IsRunID(run)) {
		return "", "", fmt.Errorf("run %q: want JOB or JOB/RUN, RUN being 8 hex digits or %q", name, storage.LegacyRun)
	}
	return job, run, nil
}

// FindRun finds the stored run of a job under destination: run, or the newest one
// when run is "". It lists the job's prefix once.
func FindRun(ctx context.Context, c *storage.Client, destination storage.URI, namespace, job, run string) (storage.StoredRun, error) {
	objs, err := c.List(ctx, storage.JobPrefix(destination, namespace, job))
	if err != nil {
		return storage.StoredRun{}, err
	}
	runs := storage.GroupRuns(destination, objs)
	if run == "" {
		if r, ok := storage.NewestRun(runs, namespace, job); ok {
			return r, nil
		}
		return storage.StoredRun{}, fmt.Errorf("no run of tfjob %s in %s: %w", job, storage.JobPrefix(destination, namespace, job), storage.ErrNotFound)
	}
	for _, r := range runs {
		if r.Namespace == namespace && r.Job == job && r.Run == run {
			return r, nil
		}
	}
	return storage.StoredRun{}, fmt.Errorf("no run %s/%s in %s: %w", job, run, storage.JobPrefix(destination, namespace, job), storage.ErrNotFound)
}
