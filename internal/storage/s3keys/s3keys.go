// Package s3keys makes and removes S3 access keys confined to one prefix of the
// bucket, on servers that have accounts and bucket policies: versitygw's admin API
// (with its internal IAM, --iam-dir) makes a key of role "user", which may touch
// nothing of a bucket it does not own, and the bucket's policy then allows that key
// its prefix alone. It is the foundation of per-notebook keys; a server without the
// admin API answers ErrNoAccounts.
package s3keys

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// ErrNoAccounts: the S3 server makes no accounts (no admin API, or no IAM behind it),
// so a key for one prefix cannot exist and whoever holds the bucket's keys holds all of
// its data.
var ErrNoAccounts = errors.New("the S3 server makes no accounts: every key it knows reaches the whole bucket")

// Key is an access key confined to Prefix of the bucket.
type Key struct {
	AccessKeyID, SecretAccessKey string
	Prefix                       string
}

// Admin makes and removes keys with the bucket's root (or admin) keys, cfg's.
type Admin struct {
	cfg  storage.Config
	mc   *minio.Client
	http *http.Client
}

// New returns an Admin for the storage cfg names; cfg holds the server's root keys.
func New(cfg storage.Config) (*Admin, error) {
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Secure: !cfg.Insecure,
		Region: cmp.Or(cfg.Region, storage.DefaultRegion),
	})
	if err != nil {
		return nil, fmt.Errorf("creating S3 client for %s: %w", cfg.Endpoint, err)
	}
	return &Admin{cfg: cfg, mc: mc, http: &http.Client{}}, nil
}

// Create makes a key for prefix (which ends in "/"): an account of role user, then the
// bucket policy's statements for it. The account comes first because the server
// refuses a policy naming a principal it does not know.
func (a *Admin) Create(ctx context.Context, prefix string) (Key, error) {
	if !strings.HasSuffix(prefix, "/") || strings.HasPrefix(prefix, "/") {
		return Key{}, fmt.Errorf("prefix %q: want a key prefix ending in / and not starting with one", prefix)
	}
	k := Key{AccessKeyID: "tfk8s" + randomHex(8), SecretAccessKey: randomHex(20), Prefix: prefix}
	body, err := xml.Marshal(account{Access: k.AccessKeyID, Secret: k.SecretAccessKey, Role: "user"})
	if err != nil {
		return Key{}, err
	}
	if err := a.admin(ctx, "/create-user", nil, body); err != nil {
		return Key{}, fmt.Errorf("creating S3 account for prefix %s: %w", prefix, err)
	}
	if err := a.editPolicy(ctx, func(p []byte) ([]byte, error) { return withKey(p, a.cfg.Bucket, k) }); err != nil {
		// Best effort: an account the policy names nowhere reaches nothing.
		_ = a.admin(ctx, "/delete-user", url.Values{"access": {k.AccessKeyID}}, nil)
		return Key{}, err
	}
	return k, nil
}

// Delete removes the key's statements from the bucket policy, then its account; a key
// already gone is no error.
func (a *Admin) Delete(ctx context.Context, accessKeyID string) error {
	if err := a.editPolicy(ctx, func(p []byte) ([]byte, error) { return withoutKey(p, accessKeyID) }); err != nil {
		return err
	}
	err := a.admin(ctx, "/delete-user", url.Values{"access": {accessKeyID}}, nil)
	if err != nil && !strings.Contains(err.Error(), "XAdminUserNotFound") {
		return fmt.Errorf("deleting S3 account %s: %w", accessKeyID, err)
	}
	return nil
}

// account is the body of versitygw's create-user: its auth.Account, as XML.
type account struct {
	XMLName xml.Name `xml:"Account"`
	Access  string   `xml:"Access"`
	Secret  string   `xml:"Secret"`
	Role    string   `xml:"Role"`
}

// editPolicy reads the bucket's policy, applies edit and writes the result; an empty
// result deletes the policy. Two edits at once may lose one: callers are single
// commands run by an admin (tfk8s notebook start and delete).
func (a *Admin) editPolicy(ctx context.Context, edit func([]byte) ([]byte, error)) error {
	cur, err := a.mc.GetBucketPolicy(ctx, a.cfg.Bucket)
	if err != nil && minio.ToErrorResponse(err).Code != "NoSuchBucketPolicy" {
		return fmt.Errorf("reading the policy of bucket %s: %w", a.cfg.Bucket, err)
	}
	next, err := edit([]byte(cur))
	if err != nil {
		return err
	}
	if err := a.mc.SetBucketPolicy(ctx, a.cfg.Bucket, string(next)); err != nil {
		return fmt.Errorf("writing the policy of bucket %s: %w", a.cfg.Bucket, err)
	}
	return nil
}

// admin sends a signed PATCH to versitygw's admin endpoint path.
func (a *Admin) admin(ctx context.Context, path string, query url.Values, body []byte) error {
	scheme := "https"
	if a.cfg.Insecure {
		scheme = "http"
	}
	u := url.URL{Scheme: scheme, Host: a.cfg.Endpoint, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req = signer.SignV4(*req, a.cfg.AccessKeyID, a.cfg.SecretAccessKey, "", cmp.Or(a.cfg.Region, storage.DefaultRegion))
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusNotFound && !bytes.Contains(answer, []byte("XAdmin")),
		resp.StatusCode == http.StatusMethodNotAllowed, resp.StatusCode == http.StatusNotImplemented:
		return fmt.Errorf("%s: %s: %w", path, resp.Status, ErrNoAccounts)
	}
	return fmt.Errorf("%s: %s: %s", path, resp.Status, bytes.TrimSpace(answer))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return hex.EncodeToString(b)
}
