package localcluster

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// startS3 starts versitygw on the bridge (again if restart) and creates the bucket;
// it returns the S3 settings, saved in p before versitygw starts.
func startS3(ctx context.Context, l launcher, p paths, restart bool) (storage.Config, error) {
	br, _ := bridgeIP(l.opts.PodCIDR)
	endpoint := netip.AddrPortFrom(br, uint16(l.opts.Ports.S3)).String()
	cfg, err := loadOrCreateS3Config(p.s3Config, endpoint)
	if err != nil {
		return storage.Config{}, err
	}
	data, err := encodeS3Config(cfg)
	if err != nil {
		return storage.Config{}, err
	}
	// Saved before versitygw starts, so that a later Up finds its credentials.
	if err := writeFileAtomic(p.s3Config, data, 0o600); err != nil {
		return storage.Config{}, err
	}
	env := []string{"ROOT_ACCESS_KEY_ID=" + cfg.AccessKeyID, "ROOT_SECRET_ACCESS_KEY=" + cfg.SecretAccessKey}
	gw, _, err := l.ensureRunning(compS3, s3Args(l.opts, p), env, restart)
	if err != nil {
		return cfg, err
	}
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Region:     cfg.Region,
		MaxRetries: 1,
	})
	if err != nil {
		return cfg, fmt.Errorf("creating the S3 client: %w", err)
	}
	return cfg, l.waitReady(ctx, gw, "S3 on "+endpoint+" to serve bucket "+cfg.Bucket, func(ctx context.Context) error {
		ok, err := mc.BucketExists(ctx, cfg.Bucket)
		if err != nil || ok {
			return err
		}
		return mc.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region})
	})
}
