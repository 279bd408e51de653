package dashboard

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// RunsSecret names the Secret of a namespace that holds the S3 settings of its runs:
// a job's storage Secret's keys, and the bucket under "bucket". The Runs page reads it
// with the user's credentials, unless the dashboard has S3 settings of its own
// (locally: flags, environment, config file), which win, as they do for a job.
const RunsSecret = "tfk8s-runs"

// runsStorage is the client and the destination (s3://<bucket>/runs/) of the runs of
// namespace, as tfk8s runs finds them.
func (d *kubeCluster) runsStorage(ctx context.Context, namespace string) (*storage.Client, storage.URI, error) {
	cfg, err := d.storage.Local()
	if err != nil {
		if cfg, err = jobs.ConfigFromSecret(ctx, d.client, namespace, RunsSecret); err != nil {
			return nil, storage.URI{}, err
		}
	}
	if err := jobs.RequireBucket(cfg); err != nil {
		return nil, storage.URI{}, fmt.Errorf("%w: no S3 bucket for the runs: neither the dashboard's S3 settings nor secret %s/%s (key %q) name one",
			ErrNotFound, namespace, RunsSecret, tfjob.SecretKeyBucket)
	}
	if d.storage.CheckEndpoint != nil {
		if err := d.storage.CheckEndpoint(cfg.Endpoint); err != nil {
			return nil, storage.URI{}, err
		}
	}
	c, err := storage.New(cfg)
	if err != nil {
		return nil, storage.URI{}, err
	}
	return c, jobs.DefaultDestination(cfg), nil
}

// liveJobs lists the TFJobs of namespace, whose runs take their state from them. A
// user who may not list them gets the runs as S3 has them.
func (d *kubeCluster) liveJobs(ctx context.Context, namespace string) []tfv1.TFJob {
	list, err := jobs.List(ctx, d.client, client.InNamespace(namespace))
	if err != nil {
		return nil
	}
	return list
}

func (d *kubeCluster) Runs(ctx context.Context, q runs.Query) ([]runs.Run, error) {
	c, dest, err := d.runsStorage(ctx, q.Namespace)
	if err != nil {
		return nil, err
	}
	return runs.List(ctx, c, dest, d.liveJobs(ctx, q.Namespace), q)
}

func (d *kubeCluster) Run(ctx context.Context, namespace, job, run string) (*RunPage, error) {
	name := job
	if run != "" {
		name += "/" + run
	}
	n, err := runs.ParseName(name)
	if err != nil {
		return nil, err
	}
	c, dest, err := d.runsStorage(ctx, namespace)
	if err != nil {
		return nil, err
	}
	// A job that cannot be read is gone, or not the user's to read: the run as S3
	// has it.
	found, err := runs.Lookup(ctx, runs.Source{Cluster: d.client, Storage: c, Destination: dest, Namespace: namespace}, n)
	if err == nil {
		err = found.Partial
	}
	if err != nil {
		return nil, err
	}
	r := found.Run
	details, err := runs.Show(ctx, c, r)
	if err != nil {
		return nil, err
	}
	page := &RunPage{Details: details}
	page.Progress, page.More, err = runProgress(ctx, c, r)
	return page, err
}

// runProgress reads the progress records of a run's replicas, in replica order, at
// most maxCurveReplicas of them; more tells that there are others.
func runProgress(ctx context.Context, c *storage.Client, r runs.Run) (found []*jobs.JobProgress, more bool, err error) {
	names := slices.SortedFunc(slices.Values(r.Stored.Progress), jobs.CompareReplicas)
	if len(names) == 0 {
		return nil, false, nil
	}
	prefix, err := storage.ParseURI(r.Prefix)
	if err != nil {
		return nil, false, err
	}
	found, err = jobs.ReadProgresses(ctx, c, prefix, names[:min(len(names), maxCurveReplicas)])
	return found, len(names) > maxCurveReplicas, err
}
