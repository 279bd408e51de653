package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/minio/minio-go/v7"
)

// DownloadRange writes bytes [offset, end) of the object at u to w: the part of a
// grown, append-only object (a TensorBoard event file the agent re-uploads whole) that
// a mirror does not have yet. It is retried as long as nothing was written.
func (c *Client) DownloadRange(ctx context.Context, u URI, offset, end int64, w io.Writer) (int64, error) {
	if offset < 0 || end <= offset {
		return 0, fmt.Errorf("downloading %s: empty range [%d, %d)", u, offset, end)
	}
	cw := &countingWriter{w: w}
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		if cw.n > 0 {
			return Permanent(errors.New("interrupted after the first bytes"))
		}
		opts := minio.GetObjectOptions{}
		if err := opts.SetRange(offset, end-1); err != nil {
			return Permanent(err)
		}
		obj, err := c.mc.GetObject(ctx, u.Bucket, u.Key, opts)
		if err != nil {
			return err
		}
		defer obj.Close()
		_, err = io.Copy(cw, obj)
		var pathErr *os.PathError
		switch {
		case isNotFound(err):
			return notFound(u)
		case errors.As(err, &pathErr):
			return Permanent(err)
		}
		return err
	})
	if err != nil {
		return cw.n, fmt.Errorf("downloading bytes %d to %d of %s: %w", offset, end, u, err)
	}
	return cw.n, nil
}
