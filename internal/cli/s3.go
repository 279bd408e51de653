package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tfk8s/tfk8s/internal/jobs"
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

// storage is how the commands find a job's files in S3: with the S3 settings of the
// flags, the environment or the tfk8s config file, else the job's Secret.
func (o *rootOptions) storage() jobs.Storage {
	return jobs.Storage{Local: o.storageConfig, CheckEndpoint: o.checkS3Endpoint}
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
