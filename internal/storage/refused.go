package storage

import (
	"context"
	"fmt"

	"github.com/minio/minio-go/v7"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// KeysSource names where LoadConfig takes the access key from when none is given
// explicitly: $AWS_ACCESS_KEY_ID when it is set, else configFile ("" if none).
func KeysSource(getenv func(string) string, configFile string) string {
	if getenv(tfjob.EnvAccessKeyID) != "" {
		return "$" + tfjob.EnvAccessKeyID
	}
	return configFile
}

// WithKeysFrom returns a copy of the client whose errors say that its keys came from
// source, e.g. KeysSource's answer.
func (c *Client) WithKeysFrom(source string) *Client {
	cp := *c
	cp.keysFrom = source
	return &cp
}

// probeBucket lists at most one key of bucket and returns the error of the answer.
// A HEAD answer has no body to name its error: a refused key reads as AccessDenied,
// or as a missing bucket from servers (versitygw) that answer an unknown key with a
// 404. A listing's answer names the code.
func (c *Client) probeBucket(ctx context.Context, bucket string) error {
	return c.listOne(ctx, URI{Bucket: bucket})
}

// listOne asks for the first object under the prefix u, for its error alone.
func (c *Client) listOne(ctx context.Context, u URI) error {
	ctx, cancel := context.WithCancel(ctx)
	answers := c.mc.ListObjects(ctx, u.Bucket, minio.ListObjectsOptions{Prefix: u.Key, MaxKeys: 1})
	first := <-answers
	cancel()
	for range answers { // the lister ends once canceled; drained, it never blocks
	}
	return first.Err
}

// refusedKeys is the error of an endpoint that refused the client's keys for bucket
// (err is Denied): it names the access key, never the secret, and where it came
// from.
func (c *Client) refusedKeys(bucket string, err error) error {
	who := "anonymous access (no access key configured)"
	if c.accessKeyID != "" {
		who = "access key " + c.accessKeyID
		if c.keysFrom != "" {
			who += " (from " + c.keysFrom + ")"
		}
	}
	return fmt.Errorf("S3 endpoint %s refused %s for bucket %s (%s): %w", c.endpoint, who, bucket, DeniedCode(err), err)
}
