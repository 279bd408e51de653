package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// begin finds what the replica's earlier attempts stored and claims this attempt's
// number, one above the highest one stored, by writing its record at once: a retried
// replica (a restarted container, a re-created pod) never writes over the log of the
// attempt before it. The files the earlier attempts stored are kept in the manifest,
// and the artifacts among them are not uploaded again while unchanged. It returns the
// previous manifest, nil if there is none.
func (u *uploader) begin(ctx context.Context) (*storage.Manifest, error) {
	c := u.client.WithBackoff(fetchBackoff)
	prev, err := readManifest(ctx, c, u.base)
	if err != nil {
		return nil, storageFailure(c, u.base.Bucket, fmt.Errorf("reading the replica's manifest: %w", err))
	}
	attempts, err := u.earlierAttempts(ctx, c, prev)
	if err != nil {
		return nil, storageFailure(c, u.base.Bucket, fmt.Errorf("listing the replica's attempts: %w", err))
	}

	u.mu.Lock()
	defer u.mu.Unlock()
	u.attempts = attempts
	u.attempt.Number = 1
	if len(attempts) > 0 {
		u.attempt.Number = attempts[len(attempts)-1].Number + 1
	}
	u.attempt.Start = time.Now().UTC()
	if prev != nil {
		artifacts := u.base.Join("artifacts/").Key
		for _, f := range prev.Files {
			u.carried[f.Key] = f
			if strings.HasPrefix(f.Key, artifacts) {
				u.state.Set(f.Path, storage.FileState{Key: f.Key, Size: f.Size, SHA256: f.SHA256})
			}
		}
	}
	if err := u.writeRecord(ctx); err != nil {
		return nil, storageFailure(c, u.base.Bucket, fmt.Errorf("claiming attempt %d: %w", u.attempt.Number, err))
	}
	u.log.Printf("attempt %d of replica %s; %d files stored by earlier attempts", u.attempt.Number, u.meta.Replica, len(u.carried))
	return prev, nil
}

// readManifest reads the manifest under the replica prefix base; nil if there is none,
// or if it cannot be parsed.
func readManifest(ctx context.Context, c *storage.Client, base storage.URI) (*storage.Manifest, error) {
	m, err := storage.ReadManifest(ctx, c, base)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrBadManifest) {
		return nil, nil // none, or written by no tfk8s: as good as none
	}
	return m, err
}

// earlierAttempts returns the replica's attempts, oldest first: those the previous
// manifest lists, and those stored under attempts/ since (an attempt killed before its
// last manifest), read from their records.
func (u *uploader) earlierAttempts(ctx context.Context, c *storage.Client, prev *storage.Manifest) ([]storage.Attempt, error) {
	byNumber := map[int]storage.Attempt{}
	if prev != nil {
		for _, a := range prev.Attempts {
			byNumber[a.Number] = a
		}
	}
	prefix := u.base.Join("attempts/")
	objs, err := c.List(ctx, prefix)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	for _, obj := range objs {
		number, _, _ := strings.Cut(strings.TrimPrefix(obj.URI.Key, prefix.Key), "/")
		n, err := strconv.Atoi(number)
		if _, known := byNumber[n]; err != nil || n < 1 || known {
			continue
		}
		byNumber[n] = storage.Attempt{Number: n}
		var buf bytes.Buffer
		if _, err := c.Download(ctx, storage.AttemptRecordURI(u.base, n), &buf); err == nil {
			var a storage.Attempt
			if json.Unmarshal(buf.Bytes(), &a) == nil && a.Number == n {
				byNumber[n] = a
			}
		}
	}
	return slices.SortedFunc(maps.Values(byNumber), func(a, b storage.Attempt) int { return a.Number - b.Number }), nil
}

// claimed reports whether the attempt has its number, and so a place to store.
func (u *uploader) claimed() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.attempt.Number > 0
}

// started records that the command started now.
func (u *uploader) started(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.attempt.Start = time.Now().UTC()
	if err := u.writeRecord(ctx); err != nil {
		u.log.Printf("recording the start of attempt %d: %v", u.attempt.Number, err)
	}
}

// finish records how the attempt ended; the final sync stores it.
func (u *uploader) finish(code int, reason, message string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	end := time.Now().UTC()
	u.attempt.End, u.attempt.ExitCode = &end, &code
	u.attempt.Reason, u.attempt.Message = reason, message
}

// writeRecord stores the attempt's record; the caller holds u.mu.
func (u *uploader) writeRecord(ctx context.Context) error {
	if err := u.putJSON(ctx, storage.AttemptRecordURI(u.base, u.attempt.Number), u.attempt); err != nil {
		return fmt.Errorf("writing the record of attempt %d: %w", u.attempt.Number, err)
	}
	return nil
}

// commandEnd says how the command ended, as a reason and a message.
func commandEnd(status syscall.WaitStatus) (reason, message string) {
	switch {
	case status.Signaled():
		return ReasonSignaled, fmt.Sprintf("the command was killed by signal %d (%v)", int(status.Signal()), status.Signal())
	case status.ExitStatus() == 0:
		return ReasonCompleted, "the command exited with code 0"
	}
	return ReasonError, fmt.Sprintf("the command exited with code %d", status.ExitStatus())
}

// statSize returns the size of the file at path.
func statSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
