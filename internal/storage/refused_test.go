package storage_test

import (
	"strings"
	"testing"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestCheckBucketNamesRefusedKeys: keys the endpoint refuses are named as refused,
// with the access key and the file they came from, never the secret; not as a
// missing bucket, which is how a HEAD answer of versitygw to an unknown key reads.
func TestCheckBucketNamesRefusedKeys(t *testing.T) {
	srv := s3server.Start(t)
	const from = "/home/ann/.tfk8s/config"
	endpoint := "http://" + srv.Endpoint
	tests := []struct {
		name   string
		set    func(c *storage.Config)
		bucket string
		want   string
	}{
		{
			name: "unknown access key", set: func(c *storage.Config) { c.AccessKeyID = "tfk8s-no-such-key" }, bucket: srv.Bucket,
			want: "S3 endpoint " + endpoint + " refused access key tfk8s-no-such-key (from " + from + ") for bucket " + srv.Bucket + " (XAdminUserNotFound): ",
		},
		{
			name: "wrong secret", set: func(c *storage.Config) { c.SecretAccessKey = strings.Repeat("x", 40) }, bucket: srv.Bucket,
			want: "S3 endpoint " + endpoint + " refused access key " + srv.AccessKey + " (from " + from + ") for bucket " + srv.Bucket + " (SignatureDoesNotMatch): ",
		},
		{
			name: "wrong secret, missing bucket", set: func(c *storage.Config) { c.SecretAccessKey = strings.Repeat("x", 40) }, bucket: "no-such-bucket",
			want: "S3 endpoint " + endpoint + " refused access key " + srv.AccessKey + " (from " + from + ") for bucket no-such-bucket (SignatureDoesNotMatch): ",
		},
		{
			name: "no keys", set: func(c *storage.Config) { c.AccessKeyID, c.SecretAccessKey = "", "" }, bucket: srv.Bucket,
			want: "S3 endpoint " + endpoint + " refused anonymous access (no access key configured) for bucket " + srv.Bucket + " (AccessDenied): ",
		},
		{
			name: "the right keys, missing bucket", set: func(*storage.Config) {}, bucket: "no-such-bucket",
			want: "bucket no-such-bucket does not exist at endpoint " + endpoint,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := clientWith(t, srv, tc.set).WithKeysFrom(from).CheckBucket(testContext(t), tc.bucket)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("CheckBucket: %v\nwant it to start with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), srv.SecretKey) || strings.Contains(err.Error(), strings.Repeat("x", 40)) {
				t.Errorf("the error names the secret: %v", err)
			}
			if strings.Contains(tc.want, "refused") && !storage.Denied(err) {
				t.Errorf("Denied(%v) = false, want true", err)
			}
		})
	}
}

// clientWith returns a client for srv with its settings changed by set.
func clientWith(t *testing.T, srv *s3server.Server, set func(c *storage.Config)) *storage.Client {
	t.Helper()
	cfg := srv.Config()
	set(&cfg)
	c, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestKeysSource: the environment's key wins over the config file's, as in LoadConfig.
func TestKeysSource(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	if got := storage.KeysSource(getenv, "/home/ann/.tfk8s/config"); got != "/home/ann/.tfk8s/config" {
		t.Errorf("without %s: %q, want the config file", tfjob.EnvAccessKeyID, got)
	}
	env[tfjob.EnvAccessKeyID] = "AKIA"
	if got := storage.KeysSource(getenv, "/home/ann/.tfk8s/config"); got != "$"+tfjob.EnvAccessKeyID {
		t.Errorf("with %s set: %q, want $%s", tfjob.EnvAccessKeyID, got, tfjob.EnvAccessKeyID)
	}
}
