package jobs

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// LocateFiles is where a live job's replicas store: its run's prefix, or, for a job
// whose replicas were started by a controller older than runs and stored nothing
// there, the job's own prefix where they stored instead. It lists one key per
// replica until one is found, the run's first.
func LocateFiles(ctx context.Context, c *storage.Client, job *tfv1.TFJob) (storage.URI, error) {
	base, _, err := locateFiles(ctx, c, job)
	return base, err
}

// locateFiles is LocateFiles, also telling whether the prefix was settled: found
// holding a replica's files, or the only one possible. An unsettled prefix is the
// run's, where nothing is stored yet.
func locateFiles(ctx context.Context, c *storage.Client, job *tfv1.TFJob) (base storage.URI, settled bool, err error) {
	base = ArtifactsBase(job)
	dest, err := storage.ParseURI(job.Spec.Artifacts.Destination)
	if err != nil {
		return base, true, nil
	}
	legacy := storage.JobPrefix(dest, job.Namespace, job.Name)
	if base == legacy {
		return base, true, nil
	}
	for _, prefix := range []storage.URI{base, legacy} {
		for _, replica := range Replicas(job) {
			if found, err := c.Any(ctx, prefix.Join(replica+"/")); found || err != nil {
				return prefix, found, err
			}
		}
	}
	return base, false, nil
}

// maxLocations bounds the jobs a Locations remembers; past it, it starts afresh.
const maxLocations = 512

// Locations remembers where jobs' replicas store once that is settled, so that a
// page polled every few seconds lists S3 once per job, not at every reload: a job's
// replicas never move their files. The zero value is ready; it is safe for
// concurrent use.
type Locations struct {
	mu    sync.Mutex
	known map[locationKey]storage.URI
}

// locationKey is a job by its UID and destination, which an edit of the job may
// change.
type locationKey struct {
	uid         types.UID
	destination string
}

// Locate is LocateFiles, remembered once settled.
func (l *Locations) Locate(ctx context.Context, c *storage.Client, job *tfv1.TFJob) (storage.URI, error) {
	key := locationKey{job.UID, job.Spec.Artifacts.Destination}
	l.mu.Lock()
	base, ok := l.known[key]
	l.mu.Unlock()
	if ok {
		return base, nil
	}
	base, settled, err := locateFiles(ctx, c, job)
	if err != nil || !settled || job.UID == "" {
		return base, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known == nil || len(l.known) >= maxLocations {
		l.known = map[locationKey]storage.URI{}
	}
	l.known[key] = base
	return base, nil
}
