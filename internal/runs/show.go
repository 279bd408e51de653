package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Details is a run in full: its row, and each replica's manifest, which lists its
// attempts and files.
type Details struct {
	Run
	Manifests []Replica
	// Advice is the right-sizing advice of a run that ended (Advise); nil while it
	// runs (Running), as its peaks may still rise.
	Advice []Advice
	// NoAdvice says why a run, or a type of its replicas, has no advice: one line
	// each (Advise).
	NoAdvice []string
}

// Replica is what one replica of a run stored.
type Replica struct {
	Name string
	// Manifest is nil when the replica stored none.
	Manifest *storage.Manifest
	// Err says why its manifest could not be read.
	Err error
	// Usage is what its latest attempt's container used; nil when it stored none
	// (an agent that could not read its cgroup, or older than the record).
	Usage *storage.Usage
	// UsageErr says why its usage record could not be read.
	UsageErr error
}

// Show reads a run's replicas' manifests and usage records, MaxParallelReads
// replicas at a time: those of the replicas it stored, and of its job's others.
func Show(ctx context.Context, c *storage.Client, r Run) (*Details, error) {
	names := slices.Clone(r.Stored.Replicas)
	for _, name := range jobs.Replicas(r.Job) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, jobs.CompareReplicas)
	if r.Prefix == "" {
		return &Details{Run: r}, nil // a live job that stores nothing
	}
	prefix, err := storage.ParseURI(r.Prefix)
	if err != nil {
		return nil, fmt.Errorf("run %s/%s: %w", r.Name, r.Run, err)
	}
	d := &Details{Run: r, Manifests: make([]Replica, len(names))}
	jobs.Parallel(len(names), MaxParallelReads, func(i int) {
		m, err := storage.ReadManifest(ctx, c, prefix.Join(names[i]+"/"))
		if errors.Is(err, storage.ErrNotFound) {
			err = nil
		}
		u, uerr := storage.ReadUsage(ctx, c, prefix.Join(names[i]+"/"))
		if errors.Is(uerr, storage.ErrNotFound) {
			uerr = nil
		}
		d.Manifests[i] = Replica{Name: names[i], Manifest: m, Err: err, Usage: u, UsageErr: uerr}
	})
	d.Advice, d.NoAdvice = Advise(r, d.Manifests)
	return d, nil
}
