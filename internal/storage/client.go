package storage

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Client reads and writes objects in S3-compatible storage. Every operation retries
// transient errors with the client's Backoff. A Client is safe for concurrent use.
type Client struct {
	mc       *minio.Client
	endpoint string
	backoff  Backoff
	// accessKeyID and keysFrom (where it came from, if known) name the keys in
	// errors.
	accessKeyID string
	keysFrom    string
}

// New returns a client for the storage described by cfg, which should come from
// LoadConfig. No request is made.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	if cfg.AccessKeyID != "" {
		creds = credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, "")
	} else {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  creds,
		Secure: !cfg.Insecure,
		Region: cmp.Or(cfg.Region, DefaultRegion),
		// Retries are ours (Retry), bounded and context-aware; minio-go's own would
		// multiply them.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("creating S3 client for %s: %w", cfg.Endpoint, err)
	}
	scheme := "https"
	if cfg.Insecure {
		scheme = "http"
	}
	return &Client{mc: mc, endpoint: scheme + "://" + cfg.Endpoint, backoff: DefaultBackoff, accessKeyID: cfg.AccessKeyID}, nil
}

// Endpoint returns the endpoint as a URL, e.g. http://127.0.0.1:9000.
func (c *Client) Endpoint() string { return c.endpoint }

// WithBackoff returns a copy of the client that retries with b.
func (c *Client) WithBackoff(b Backoff) *Client {
	cp := *c
	cp.backoff = b
	return &cp
}

// checkBackoff is short: a bucket check answers a user who is waiting.
var checkBackoff = Backoff{Initial: 200 * time.Millisecond, Max: time.Second, Attempts: 3}

// CheckBucket verifies that the endpoint answers, that it accepts the keys and that
// bucket exists, telling the three failures apart.
func (c *Client) CheckBucket(ctx context.Context, bucket string) error {
	var exists bool
	err := Retry(ctx, checkBackoff, func(ctx context.Context) error {
		var err error
		exists, err = c.mc.BucketExists(ctx, bucket)
		return err
	})
	if err == nil && !exists || Denied(err) {
		if probed := c.probeBucket(ctx, bucket); Denied(probed) {
			err = probed
		}
	}
	switch {
	case err != nil && unreachable(err):
		return fmt.Errorf("S3 endpoint %s unreachable: %w", c.endpoint, err)
	case Denied(err):
		return c.refusedKeys(bucket, err)
	case err != nil:
		return fmt.Errorf("checking bucket %s at endpoint %s: %w", bucket, c.endpoint, err)
	case !exists:
		return fmt.Errorf("bucket %s does not exist at endpoint %s", bucket, c.endpoint)
	}
	return nil
}

// CheckRoot is CheckBucket for where the CLI stores, Config.Root: under a prefix it
// lists the prefix instead, since a key confined to it may not ask of the bucket.
func (c *Client) CheckRoot(ctx context.Context, root URI) error {
	if root.Key == "" {
		return c.CheckBucket(ctx, root.Bucket)
	}
	err := Retry(ctx, checkBackoff, func(ctx context.Context) error { return c.listOne(ctx, root) })
	switch {
	case err == nil:
		return nil
	case unreachable(err):
		return fmt.Errorf("S3 endpoint %s unreachable: %w", c.endpoint, err)
	case Denied(err):
		return c.refusedKeys(root.Bucket, err)
	case minio.ToErrorResponse(err).Code == minio.NoSuchBucket:
		return fmt.Errorf("bucket %s does not exist at endpoint %s", root.Bucket, c.endpoint)
	}
	return fmt.Errorf("checking %s at endpoint %s: %w", root, c.endpoint, err)
}

// unreachable reports whether err is a failure to talk to the endpoint at all, rather
// than an answer from it.
func unreachable(err error) bool {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode != 0 {
		return false
	}
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr)
}

// isNotFound reports whether err says that a key or bucket does not exist. A 404 that
// names another cause is not one: some servers answer an unknown access key so.
func isNotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	if Denied(err) {
		return false
	}
	return resp.Code == minio.NoSuchKey || resp.Code == minio.NoSuchBucket ||
		resp.StatusCode == 404 && (resp.Code == "" || resp.Code == "NotFound")
}

// ErrNotFound is returned (wrapped) when an object or prefix does not exist.
var ErrNotFound = errors.New("not found")

// notFound wraps ErrNotFound with the URI, permanently.
func notFound(u URI) error {
	return Permanent(fmt.Errorf("%s: %w", u, ErrNotFound))
}
