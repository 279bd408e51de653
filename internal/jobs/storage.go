package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Storage finds a job's files in S3 for a front end: with the front end's own S3
// settings where it has them, else with those of the job's storage Secret.
type Storage struct {
	// Local resolves the front end's own S3 settings (flags, environment, config file).
	Local func() (storage.Config, error)
	// CheckEndpoint, if set, refuses an S3 endpoint before it is dialled: the
	// in-cluster dashboard's allow-list.
	CheckEndpoint func(endpoint string) error
}

// ForJob returns a client for the storage of a job. The local settings (flags,
// environment, config file) win, since the endpoint in the job's Secret may be one
// only pods can reach; without a local endpoint, the job's Secret is used.
func (o Storage) ForJob(ctx context.Context, cs *Clients, job *tfv1.TFJob) (*storage.Client, storage.Config, error) {
	cfg, err := o.Local()
	if err != nil && job != nil && job.Spec.Storage != nil {
		var fromSecret error
		cfg, fromSecret = ConfigFromSecret(ctx, cs.Client, job.Namespace, job.Spec.Storage.SecretRef.Name)
		if fromSecret != nil {
			err = errors.Join(err, fromSecret)
		} else {
			err = nil
		}
	}
	if err == nil && o.CheckEndpoint != nil {
		err = o.CheckEndpoint(cfg.Endpoint)
	}
	if err != nil {
		return nil, storage.Config{}, err
	}
	c, err := storage.New(cfg)
	if err != nil {
		return nil, storage.Config{}, err
	}
	return c, cfg, nil
}

// ConfigFromSecret reads the S3 settings from a job's storage Secret, or from the
// dashboard's runs Secret, which also names the bucket.
func ConfigFromSecret(ctx context.Context, c client.Client, namespace, name string) (storage.Config, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return storage.Config{}, fmt.Errorf("reading storage secret %s/%s: %w", namespace, name, err)
	}
	cfg := storage.Config{
		Endpoint:        string(secret.Data[tfjob.SecretKeyEndpoint]),
		AccessKeyID:     string(secret.Data[tfjob.SecretKeyAccessKeyID]),
		SecretAccessKey: string(secret.Data[tfjob.SecretKeySecretAccessKey]),
		Region:          string(secret.Data[tfjob.SecretKeyRegion]),
		Bucket:          string(secret.Data[tfjob.SecretKeyBucket]),
	}
	if v := string(secret.Data[tfjob.SecretKeyInsecure]); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return storage.Config{}, fmt.Errorf("reading storage secret %s/%s: key %s=%q: want true or false", namespace, name, tfjob.SecretKeyInsecure, v)
		}
		cfg.Insecure = b
	}
	// LoadConfig checks and normalises the endpoint; the environment is not consulted.
	return storage.LoadConfig(cfg, func(string) string { return "" }, "")
}

// RequireBucket checks that a bucket is configured.
func RequireBucket(cfg storage.Config) error {
	if cfg.Bucket == "" {
		return &storage.NotConfiguredError{Msg: fmt.Sprintf("no S3 bucket configured: set --s3-bucket, %s or bucket in ~/.tfk8s/config", tfjob.EnvS3Bucket)}
	}
	return nil
}

// JobFiles locates what the agent backed up for a job, its run's prefix
// <destination>/<namespace>/<job>/<run>/, and returns a client for it. The job is nil,
// and no error, when it no longer exists: its files are then those of its newest run
// under the default destination, s3://<bucket>/runs, or of the run name gives as
// JOB/RUN.
func (o Storage) JobFiles(ctx context.Context, cs *Clients, name string) (*tfv1.TFJob, storage.URI, *storage.Client, error) {
	if err := RefuseKubeflowRef(name, "files in S3"); err != nil {
		return nil, storage.URI{}, nil, err
	}
	n, err := storage.ParseRunName(name)
	if err != nil {
		return nil, storage.URI{}, nil, err
	}
	jobName, run := n.Job, n.Run
	job, err := Get(ctx, cs.Client, cs.Namespace, jobName)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, storage.URI{}, nil, err
	}
	if err := RefuseKubeflowExtras(job, "files in S3"); err != nil {
		return job, storage.URI{}, nil, err
	}
	if job != nil && run != "" && run != tfjob.RunID(string(job.UID)) {
		job, err = nil, &NotFoundError{Namespace: cs.Namespace, Name: name}
	}
	if job != nil && job.Spec.Artifacts == nil {
		return job, storage.URI{}, nil, fmt.Errorf("tfjob %s backs up nothing to S3: it has no spec.artifacts", name)
	}
	c, cfg, serr := o.ForJob(ctx, cs, job)
	if serr != nil {
		return job, storage.URI{}, nil, errors.Join(err, serr)
	}
	if job != nil {
		base, err := LocateFiles(ctx, c, job)
		return job, base, c, err
	}
	if berr := RequireBucket(cfg); berr != nil {
		return nil, storage.URI{}, nil, errors.Join(err, berr)
	}
	dest := DefaultDestination(cfg)
	stored, ferr := storage.FindRun(ctx, c, dest, cs.Namespace, jobName, run)
	switch {
	case errors.Is(ferr, storage.ErrNotFound):
		// Nothing stored: the callers say so of the prefix the run would have.
		return nil, storage.RunPrefix(dest, cs.Namespace, jobName, run), c, nil
	case ferr != nil:
		return nil, storage.URI{}, nil, errors.Join(err, ferr)
	}
	return nil, stored.Prefix, c, nil
}

// DefaultDestination is where submit backs up artifacts and logs:
// s3://<bucket>/<prefix>runs/.
func DefaultDestination(cfg storage.Config) storage.URI {
	return cfg.Root().Join(DefaultArtifactsPrefix + "/")
}

// Labels of the objects the front ends make (storage Secrets, notebooks), so that
// they only ever replace their own.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "tfk8s"
)

// SecretData is the S3 settings as a job's pods read them from the Secret
// spec.storage.secretRef names: the endpoint as pods reach it, and cfg's credentials.
func SecretData(endpoint string, insecure bool, cfg storage.Config) map[string][]byte {
	return map[string][]byte{
		tfjob.SecretKeyEndpoint:        []byte(endpoint),
		tfjob.SecretKeyAccessKeyID:     []byte(cfg.AccessKeyID),
		tfjob.SecretKeySecretAccessKey: []byte(cfg.SecretAccessKey),
		tfjob.SecretKeyRegion:          []byte(cfg.Region),
		tfjob.SecretKeyInsecure:        []byte(strconv.FormatBool(insecure)),
	}
}

// EnvStorageSecret names the default of --storage-secret. A notebook sets it to its S3
// Secret, so that the jobs submitted from it read that Secret and the notebook's
// account needs no access to Secrets.
const EnvStorageSecret = "TFK8S_STORAGE_SECRET"
