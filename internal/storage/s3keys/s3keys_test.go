package s3keys

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

// TestKeysStayInTheirPrefix runs against versitygw (bin/versitygw, as make
// install-tools builds it): notebooks nb-a and nb-b each get a key for their prefix.
// nb-a's key writes, reads and lists under nb-a's prefix and is refused reading,
// writing and listing nb-b's and the bucket's root; once deleted, it is refused
// everywhere, and nb-b's key still works.
func TestKeysStayInTheirPrefix(t *testing.T) {
	srv := s3server.StartWithAccounts(t)
	ctx := context.Background()
	admin, err := New(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	a, err := admin.Create(ctx, "notebooks/team/nb-a/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := admin.Create(ctx, "notebooks/team/nb-b/")
	if err != nil {
		t.Fatal(err)
	}
	root := srv.MinioClient()
	put(ctx, t, root, "notebooks/team/nb-b/secret.txt", "nb-b's")
	put(ctx, t, root, "runs/team/job/run.json", "shared")

	as := keyClient(t, srv, a)
	if err := tryPut(ctx, as, "notebooks/team/nb-a/own.txt", "nb-a's"); err != nil {
		t.Errorf("nb-a's key writing its own prefix: %v", err)
	}
	if got, err := tryGet(ctx, as, "notebooks/team/nb-a/own.txt"); err != nil || got != "nb-a's" {
		t.Errorf("nb-a's key reading its own prefix: %q, %v", got, err)
	}
	if keys, err := tryList(ctx, as, "notebooks/team/nb-a/"); err != nil || len(keys) != 1 {
		t.Errorf("nb-a's key listing its own prefix: %v, %v; want its one object", keys, err)
	}
	for _, refused := range []struct {
		what string
		err  error
	}{
		{"reading nb-b's object", errOf(tryGet(ctx, as, "notebooks/team/nb-b/secret.txt"))},
		{"writing under nb-b's prefix", tryPut(ctx, as, "notebooks/team/nb-b/planted.txt", "x")},
		{"reading outside every notebook's prefix", errOf(tryGet(ctx, as, "runs/team/job/run.json"))},
		{"listing nb-b's prefix", errOf(tryList(ctx, as, "notebooks/team/nb-b/"))},
		{"listing the bucket", errOf(tryList(ctx, as, ""))},
	} {
		if minio.ToErrorResponse(refused.err).Code != "AccessDenied" {
			t.Errorf("nb-a's key %s: %v; want AccessDenied", refused.what, refused.err)
		}
	}

	if err := admin.Delete(ctx, a.AccessKeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := tryGet(ctx, as, "notebooks/team/nb-a/own.txt"); err == nil {
		t.Error("nb-a's deleted key still reads its prefix")
	}
	if err := tryPut(ctx, keyClient(t, srv, b), "notebooks/team/nb-b/after.txt", "x"); err != nil {
		t.Errorf("nb-b's key after nb-a's was deleted: %v", err)
	}
	if err := admin.Delete(ctx, a.AccessKeyID); err != nil {
		t.Errorf("deleting a deleted key: %v", err)
	}
}

// TestCreateRefusesABadPrefix: a prefix must be a directory of the bucket.
func TestCreateRefusesABadPrefix(t *testing.T) {
	admin, err := New(s3server.StartWithAccounts(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"nb-a", "/nb-a/", ""} {
		if _, err := admin.Create(context.Background(), prefix); err == nil || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("Create(%q): %v; want a refusal naming the prefix", prefix, err)
		}
	}
}

func keyClient(t *testing.T, srv *s3server.Server, k Key) *minio.Client {
	t.Helper()
	mc, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(k.AccessKeyID, k.SecretAccessKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return mc
}

func put(ctx context.Context, t *testing.T, mc *minio.Client, key, body string) {
	t.Helper()
	if err := tryPut(ctx, mc, key, body); err != nil {
		t.Fatal(err)
	}
}

func tryPut(ctx context.Context, mc *minio.Client, key, body string) error {
	_, err := mc.PutObject(ctx, s3server.Bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	return err
}

func tryGet(ctx context.Context, mc *minio.Client, key string) (string, error) {
	obj, err := mc.GetObject(ctx, s3server.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return "", err
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	return string(b), err
}

func tryList(ctx context.Context, mc *minio.Client, prefix string) ([]string, error) {
	var keys []string
	for o := range mc.ListObjects(ctx, s3server.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return keys, o.Err
		}
		keys = append(keys, o.Key)
	}
	return keys, nil
}

// errOf is the error of a call that also returns a value.
func errOf[T any](_ T, err error) error {
	if err == nil {
		return errors.New("no error")
	}
	return err
}

// TestServerWithoutAccounts: versitygw without its IAM, as local mode runs it today,
// makes no account; Create says so with ErrNoAccounts, for the caller to tell the user
// that the bucket's keys reach all of it.
func TestServerWithoutAccounts(t *testing.T) {
	admin, err := New(s3server.Start(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(context.Background(), "notebooks/team/nb-a/"); !errors.Is(err, ErrNoAccounts) {
		t.Errorf("Create on a server without accounts: %v; want ErrNoAccounts", err)
	}
}
