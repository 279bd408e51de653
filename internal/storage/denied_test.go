package storage_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/testing/s3server"
)

func TestRefusedCredentialsAreNotRetried(t *testing.T) {
	srv := s3server.Start(t)
	tests := []struct {
		name     string
		set      func(c *storage.Config)
		wantCode string
	}{
		{name: "unknown access key", set: func(c *storage.Config) { c.AccessKeyID = "tfk8s-no-such-key" }, wantCode: "XAdminUserNotFound"},
		{name: "wrong secret", set: func(c *storage.Config) { c.SecretAccessKey = strings.Repeat("x", 40) }, wantCode: "SignatureDoesNotMatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A patient backoff: a retried call would take over a minute.
			c := clientWith(t, srv, tc.set).WithBackoff(storage.Backoff{Initial: 5 * time.Second, Max: 10 * time.Second, Attempts: 10})
			ops := map[string]func() error{
				"list": func() error {
					_, err := c.List(testContext(t), storage.URI{Bucket: srv.Bucket, Key: "runs/"})
					return err
				},
				"download": func() error {
					_, err := c.Download(testContext(t), storage.URI{Bucket: srv.Bucket, Key: "runs/manifest.json"}, &bytes.Buffer{})
					return err
				},
				"upload": func() error {
					return c.PutObject(testContext(t), storage.URI{Bucket: srv.Bucket, Key: "runs/x"}, strings.NewReader("x"), 1, storage.UploadOptions{})
				},
			}
			for name, op := range ops {
				start := time.Now()
				err := op()
				if took := time.Since(start); took > 4*time.Second {
					t.Errorf("%s took %v: retried", name, took)
				}
				if !storage.Denied(err) || storage.Transient(err) || errors.Is(err, storage.ErrNotFound) {
					t.Errorf("%s: Denied = %v, Transient = %v, not found = %v, want denied only: %v", name,
						storage.Denied(err), storage.Transient(err), errors.Is(err, storage.ErrNotFound), err)
				}
				if name != "upload" && storage.DeniedCode(err) != tc.wantCode {
					t.Errorf("%s: code %q, want %q", name, storage.DeniedCode(err), tc.wantCode)
				}
			}
		})
	}
}
