package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// fetchBackoff is patient: before the command starts, waiting out a short storage
// outage beats failing the pod.
var fetchBackoff = storage.Backoff{Initial: 500 * time.Millisecond, Max: 8 * time.Second, Attempts: 10}

// exitError is a failure before the command starts, with the agent's exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// fail wraps err with the exit code that tells its kind.
func fail(code int, err error) error { return &exitError{code: code, err: err} }

// storageFailure gives a storage error its exit code: missing things and refused
// credentials are permanent, the rest may pass.
func storageFailure(c *storage.Client, bucket string, err error) error {
	switch {
	case storage.Denied(err):
		return fail(ExitStorageDenied, deniedError(c, bucket, err))
	case errors.Is(err, storage.ErrNotFound):
		return fail(ExitNotFound, err)
	}
	return fail(ExitStorageUnavailable, err)
}

// deniedError says that the storage refused the credentials, and what to check.
func deniedError(c *storage.Client, bucket string, err error) error {
	return fmt.Errorf("the storage at %s refused the credentials for bucket %s (%s): check %s and %s in the job's storage Secret "+
		"(keys accessKeyID and secretAccessKey), and that they may read and write the bucket: %w",
		c.Endpoint(), bucket, storage.DeniedCode(err), tfjob.EnvAccessKeyID, tfjob.EnvSecretAccessKey, err)
}

// capHint adds to an archive refused by a cap how to raise it.
func capHint(err error) error {
	var le *pack.LimitError
	if !errors.As(err, &le) {
		return err
	}
	flag, env := "--unpack-max-bytes", tfjob.EnvUnpackMaxBytes
	if le.Cap == pack.CapEntries {
		flag, env = "--unpack-max-entries", tfjob.EnvUnpackMaxEntries
	}
	return fmt.Errorf("%w: raise it with the agent's %s, or %s in the job's environment (tfk8s submit --env %s=N)", err, flag, env, env)
}

// fetchCode downloads the code archive, checks its digest and unpacks it into the code
// path. The archive goes through a temporary file: it is verified in full before a
// single file is unpacked.
func fetchCode(ctx context.Context, c *storage.Client, cfg Config, log *logger) error {
	src, err := storage.ParseURI(cfg.CodeSource)
	if err != nil {
		return fail(ExitUsage, err)
	}
	want := cfg.CodeSHA256
	if want == "" {
		want, _ = pack.SHA256FromKey(src.Key)
	}
	if err := os.MkdirAll(cfg.CodePath, 0o755); err != nil {
		return fail(ExitInternal, fmt.Errorf("creating code path: %w", err))
	}
	tmp, err := os.CreateTemp(cfg.CodePath, ".tfk8s-code-*.tar.gz")
	if err != nil {
		return fail(ExitInternal, fmt.Errorf("creating code archive file: %w", err))
	}
	tmp.Close()
	defer os.Remove(tmp.Name())

	start := time.Now()
	if err := c.WithBackoff(fetchBackoff).DownloadFile(ctx, src, tmp.Name()); err != nil {
		return storageFailure(c, src.Bucket, fmt.Errorf("fetching code: %w", err))
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return fail(ExitInternal, err)
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return fail(ExitInternal, fmt.Errorf("hashing code archive: %w", err))
	}
	got := hex.EncodeToString(h.Sum(nil))
	switch {
	case want == "":
		log.Printf("code archive %s has no expected SHA-256 (none given, none in its name); it is %s", src, got)
	case got != want:
		return fail(ExitDigestMismatch, fmt.Errorf("code archive %s has SHA-256 %s, want %s: refusing to run it", src, got, want))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(ExitInternal, err)
	}
	if err := pack.Unpack(f, cfg.CodePath, cfg.Unpack); err != nil {
		return fail(ExitBadArchive, capHint(err))
	}
	log.Printf("code %s (%d bytes, sha256 %s) unpacked into %s in %v", src, size, got, cfg.CodePath, time.Since(start).Round(time.Millisecond))
	return nil
}
