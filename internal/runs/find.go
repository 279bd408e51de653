package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Source is where the runs of a namespace are looked up: the cluster that may hold
// their jobs, and the bucket that holds what they stored.
type Source struct {
	// Cluster reads the jobs; nil when there is none to ask, NoCluster saying why.
	Cluster   client.Client
	NoCluster error
	Storage   *storage.Client
	// Destination is where the runs are stored, s3://<bucket>/runs.
	Destination storage.URI
	Namespace   string
}

// Found is a run looked up by its name, with the TFJob of its job's name.
type Found struct {
	Run
	// LiveJob is the TFJob of the run's job name in the cluster, Kubeflow's included;
	// nil when there is none, or when the cluster cannot say (LiveErr).
	LiveJob *tfv1.TFJob
	// LiveErr says why the cluster could not say: the run is then as S3 has it.
	LiveErr error
	// Partial says why part of the run's record could not be read: the run is what
	// the rest said.
	Partial error
}

// Name is a run's name parsed: its job's, and the run's, "" for the job's newest.
type Name = storage.RunName

// ParseName parses a run's name, JOB or JOB/RUN, refusing a kubeflow.org job's. It
// reads nothing, so that a bad name is said before the S3 settings are needed.
func ParseName(name string) (Name, error) {
	if err := jobs.RefuseKubeflowRef(name, "runs"); err != nil {
		return Name{}, err
	}
	return storage.ParseRunName(name)
}

// Lookup finds the run name names, its job's newest or the one named: it reads the
// TFJob of that name from the cluster, then the stored run, listing the job's prefix
// in S3 once. While the job exists its run is the newest, and takes its state from
// it. A kubeflow.org job keeps no runs: what S3 holds under its name is an earlier
// tfk8s.io job's, and without any the refusal says why. LiveErr is set even when
// the run is not found.
func Lookup(ctx context.Context, src Source, name Name) (Found, error) {
	job, id := name.Job, name.Run
	var err error
	found := Found{}
	if src.NoCluster != nil {
		found.LiveErr = fmt.Errorf("reading tfjob %s: %w", job, src.NoCluster)
	} else if src.Cluster != nil {
		var gone *jobs.NotFoundError
		// Get's error names the job already.
		if found.LiveJob, err = jobs.Get(ctx, src.Cluster, src.Namespace, job); err != nil && !errors.As(err, &gone) {
			found.LiveErr = err
		}
	}
	live := found.LiveJob
	refusal := jobs.RefuseKubeflowExtras(live, "runs")
	if refusal != nil || (live != nil && id != "" && id != tfjob.RunID(string(live.UID))) {
		live = nil
	}
	if live != nil && live.Spec.Artifacts != nil && storesUnder(live, src.Destination) {
		id = tfjob.RunID(string(live.UID))
	}
	var fallbacks []string
	if live != nil {
		// Its replicas may have stored where a controller older than runs put them.
		fallbacks = append(fallbacks, storage.LegacyRun)
	}
	stored, err := storage.FindRun(ctx, src.Storage, src.Destination, src.Namespace, job, id, fallbacks...)
	switch {
	case err == nil:
		found.Run, found.Partial = read(ctx, src.Storage, Query{Series: true}, stored)
	case errors.Is(err, storage.ErrNotFound) && live != nil:
		found.Run = Run{Namespace: src.Namespace, Name: job, Run: tfjob.RunID(string(live.UID)), Started: live.CreationTimestamp.Time}
		if live.Spec.Artifacts != nil {
			found.Prefix = jobs.ArtifactsBase(live).String()
		}
	default:
		return Found{LiveErr: found.LiveErr}, cmp.Or(refusal, err)
	}
	if live != nil {
		found.fromLive(live)
	}
	return found, nil
}
