package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// s3Flags say where the S3-compatible storage is. Credentials have no flags, so that
// they never show in a process list or a shell history: they come from
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, else ~/.tfk8s/config.
type s3Flags struct {
	endpoint string
	bucket   string
	region   string
	insecure bool
}

func (f *s3Flags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "S3 endpoint, host:port or http(s)://host:port (else $"+tfjob.EnvS3Endpoint+", else ~/.tfk8s/config)")
	fs.StringVar(&f.bucket, "s3-bucket", "", "S3 bucket for code, data and artifacts (else $"+tfjob.EnvS3Bucket+", else ~/.tfk8s/config)")
	fs.StringVar(&f.region, "s3-region", "", "S3 region (else $"+tfjob.EnvRegion+", else ~/.tfk8s/config)")
	fs.BoolVar(&f.insecure, "s3-insecure", false, "plain HTTP to S3 (else $"+tfjob.EnvS3Insecure+", else ~/.tfk8s/config)")
}

// storageConfig resolves the S3 settings: flags, then the environment, then the tfk8s
// config file.
func (o *rootOptions) storageConfig() (storage.Config, error) {
	explicit := storage.Config{Endpoint: o.s3.endpoint, Bucket: o.s3.bucket, Region: o.s3.region, Insecure: o.s3.insecure}
	cfg, err := storage.LoadConfig(explicit, o.env.Getenv, o.env.ConfigFile)
	if err != nil {
		return storage.Config{}, fmt.Errorf("resolving S3 settings: %w", err)
	}
	return cfg, nil
}

// localStorage returns a client for the S3 settings of the flags, the environment or
// the tfk8s config file.
func (o *rootOptions) localStorage() (*storage.Client, error) {
	cfg, err := o.storageConfig()
	if err != nil {
		return nil, err
	}
	return storage.New(cfg)
}

// storageForJob returns a client for the storage of a job. The local settings (flags,
// environment, config file) win, since the endpoint in the job's Secret may be one
// only pods can reach; without a local endpoint, the job's Secret is used.
func (o *rootOptions) storageForJob(ctx context.Context, cs *clients, job *tfv1.TFJob) (*storage.Client, storage.Config, error) {
	cfg, err := o.storageConfig()
	if err != nil && job != nil && job.Spec.Storage != nil {
		var fromSecret error
		cfg, fromSecret = configFromSecret(ctx, cs.client, job.Namespace, job.Spec.Storage.SecretRef.Name)
		if fromSecret != nil {
			err = errors.Join(err, fromSecret)
		} else {
			err = nil
		}
	}
	if err == nil && o.checkS3Endpoint != nil {
		err = o.checkS3Endpoint(cfg.Endpoint)
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

// configFromSecret reads the S3 settings from a job's storage Secret.
func configFromSecret(ctx context.Context, c client.Client, namespace, name string) (storage.Config, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return storage.Config{}, fmt.Errorf("reading storage secret %s/%s: %w", namespace, name, err)
	}
	cfg := storage.Config{
		Endpoint:        string(secret.Data[tfjob.SecretKeyEndpoint]),
		AccessKeyID:     string(secret.Data[tfjob.SecretKeyAccessKeyID]),
		SecretAccessKey: string(secret.Data[tfjob.SecretKeySecretAccessKey]),
		Region:          string(secret.Data[tfjob.SecretKeyRegion]),
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

// requireBucket checks that a bucket is configured.
func requireBucket(cfg storage.Config) error {
	if cfg.Bucket == "" {
		return fmt.Errorf("no S3 bucket configured: set --s3-bucket, %s or bucket in ~/.tfk8s/config", tfjob.EnvS3Bucket)
	}
	return nil
}

// endpointScheme splits an endpoint given as a URL into host:port and whether it is
// plain HTTP; a bare host:port keeps insecure.
func endpointScheme(endpoint string, insecure bool) (string, bool) {
	switch {
	case strings.HasPrefix(endpoint, "http://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/"), true
	case strings.HasPrefix(endpoint, "https://"):
		return strings.TrimSuffix(strings.TrimPrefix(endpoint, "https://"), "/"), false
	}
	return strings.TrimSuffix(endpoint, "/"), insecure
}

// jobStorage locates what the agent backed up for a job, <destination>/<namespace>/<job>/,
// and returns a client for it. The job is nil, and no error, when it no longer exists:
// its files are then looked for under the default destination, s3://<bucket>/runs.
func (o *rootOptions) jobStorage(ctx context.Context, cs *clients, name string) (*tfv1.TFJob, storage.URI, *storage.Client, error) {
	job, err := getJob(ctx, cs.client, cs.namespace, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, storage.URI{}, nil, err
	}
	if job != nil && job.Spec.Artifacts == nil {
		return job, storage.URI{}, nil, fmt.Errorf("tfjob %s backs up nothing to S3: it has no spec.artifacts", name)
	}
	c, cfg, serr := o.storageForJob(ctx, cs, job)
	if serr != nil {
		return job, storage.URI{}, nil, errors.Join(err, serr)
	}
	if job != nil {
		return job, artifactsBase(job), c, nil
	}
	if berr := requireBucket(cfg); berr != nil {
		return nil, storage.URI{}, nil, errors.Join(err, berr)
	}
	base := storage.URI{Bucket: cfg.Bucket, Key: defaultArtifactsPrefix + "/"}.Join(cs.namespace, name+"/")
	return nil, base, c, nil
}
