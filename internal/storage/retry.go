package storage

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"
)

// Backoff bounds the retries of one S3 operation: delays start at Initial and double
// up to Max, with ±20% jitter so that many replicas do not retry in step.
type Backoff struct {
	// Initial is the delay after the first failure.
	Initial time.Duration
	// Max caps a single delay.
	Max time.Duration
	// Attempts is the total number of tries; 0 retries until the context is done.
	Attempts int
}

// DefaultBackoff tries an operation 6 times over about 10 seconds.
var DefaultBackoff = Backoff{Initial: 250 * time.Millisecond, Max: 4 * time.Second, Attempts: 6}

// permanentError marks an error that retrying cannot cure.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that Retry returns it at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Retry calls fn until it succeeds, returns an error that is not transient, the
// attempts are used up or ctx is done. The error of the last attempt is returned.
func Retry(ctx context.Context, b Backoff, fn func(ctx context.Context) error) error {
	delay := b.Initial
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !Transient(err) {
			return err
		}
		if b.Attempts > 0 && attempt >= b.Attempts {
			return err
		}
		jittered := time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
		t := time.NewTimer(jittered)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, b.Max)
	}
}

// Transient reports whether err may go away by itself: a network error, a timeout, a
// server error (5xx), throttling (429) or a request timeout (408). Client errors such as
// a missing bucket or denied access, local file errors, and cancellation are not.
func Transient(err error) bool {
	var perm permanentError
	switch {
	case err == nil, errors.As(err, &perm),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	if Denied(err) {
		return false
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode != 0 {
		return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusRequestTimeout
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return false
	}
	// Connection refused or reset, DNS failures, unexpected EOFs, and minio-go's own
	// errors without a status all end up here: worth another try.
	return true
}

// deniedCodes are the S3 error codes by which a server refuses the credentials or the
// permission to do what was asked; some come with a 400 rather than a 403.
var deniedCodes = map[string]bool{
	"AccessDenied":                 true,
	"AllAccessDisabled":            true,
	"AccountProblem":               true,
	"AuthorizationHeaderMalformed": true,
	"ExpiredToken":                 true,
	"InvalidAccessKeyId":           true,
	"InvalidSecurity":              true,
	"InvalidToken":                 true,
	"SignatureDoesNotMatch":        true,
	"TokenRefreshRequired":         true,
	"Unauthorized":                 true,
	"XAdminUserNotFound":           true, // versitygw's answer to an unknown access key, a 404
}

// Denied reports whether err is the storage refusing the credentials or the permission
// (401, 403, or one of the codes that say so, whatever their status). Retrying cannot cure it: only other
// credentials can, so the agent fails the replica for good instead of looping.
func Denied(err error) bool {
	var resp minio.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	return deniedCodes[resp.Code] || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
}

// DeniedCode returns the S3 error code of a Denied error, e.g. InvalidAccessKeyId.
func DeniedCode(err error) string {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.Code
	}
	return ""
}
