package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestTransient(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "connection refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, want: true},
		{name: "server error", err: minio.ErrorResponse{StatusCode: 503, Code: "SlowDown"}, want: true},
		{name: "throttled", err: minio.ErrorResponse{StatusCode: 429}, want: true},
		{name: "wrapped server error", err: fmt.Errorf("uploading: %w", minio.ErrorResponse{StatusCode: 500}), want: true},
		{name: "missing bucket", err: minio.ErrorResponse{StatusCode: 404, Code: minio.NoSuchBucket}, want: false},
		{name: "access denied", err: minio.ErrorResponse{StatusCode: 403, Code: "AccessDenied"}, want: false},
		{name: "local file", err: &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}, want: false},
		{name: "cancelled", err: fmt.Errorf("x: %w", context.Canceled), want: false},
		{name: "permanent", err: Permanent(errors.New("bad digest")), want: false},
		{name: "nil", err: nil, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Transient(tc.err); got != tc.want {
				t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	transient := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	fast := Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: 4}
	tests := []struct {
		name         string
		backoff      Backoff
		failures     int
		err          error
		wantAttempts int
		wantErr      bool
	}{
		{name: "succeeds at once", backoff: fast, wantAttempts: 1},
		{name: "succeeds after transient failures", backoff: fast, failures: 3, err: transient, wantAttempts: 4},
		{name: "gives up after the attempts", backoff: fast, failures: 10, err: transient, wantAttempts: 4, wantErr: true},
		{name: "permanent error is not retried", backoff: fast, failures: 10, err: Permanent(errors.New("no")), wantAttempts: 1, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			err := Retry(context.Background(), tc.backoff, func(context.Context) error {
				attempts++
				if attempts <= tc.failures {
					return tc.err
				}
				return nil
			})
			if (err != nil) != tc.wantErr || attempts != tc.wantAttempts {
				t.Errorf("Retry: err = %v after %d attempts, want error %v after %d", err, attempts, tc.wantErr, tc.wantAttempts)
			}
		})
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Retry(ctx, Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}, func(context.Context) error {
		return &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Retry error = %v, want one wrapping the context's deadline", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Retry took %v after its context ended", elapsed)
	}
}
