package storage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// metaSHA256 is the user metadata under which tfk8s stores an object's SHA-256, so that
// a download can tell an identical local file without reading the object.
const metaSHA256 = "Tfk8s-Sha256"

// Object describes a stored object.
type Object struct {
	// URI is the object's location.
	URI URI
	// Size is its length in bytes.
	Size int64
	// ModTime is when it was last written.
	ModTime time.Time
	// ETag is the server's entity tag, without quotes.
	ETag string
	// SHA256 is the hex digest tfk8s recorded when uploading it, if known.
	SHA256 string
}

// UploadOptions tune an upload.
type UploadOptions struct {
	// Progress, if set, is told of the bytes sent, for a progress bar.
	Progress ProgressFunc
	// ContentType is the object's media type; default application/octet-stream.
	ContentType string
	// SHA256, the hex digest of the content if the caller knows it, is stored with the
	// object. The content is then not hashed a second time to sign the request over
	// plain HTTP: whoever reads it checks it against this digest (the agent refuses a
	// code archive that does not match, the manifest lists every artifact's digest),
	// and the upload goes about twice as fast on a machine without SHA instructions.
	SHA256 string
}

// putOptions translates UploadOptions for minio-go.
func (o UploadOptions) putOptions(progress *progressReader) minio.PutObjectOptions {
	opts := minio.PutObjectOptions{ContentType: cmp.Or(o.ContentType, "application/octet-stream")}
	if o.SHA256 != "" {
		opts.UserMetadata = map[string]string{metaSHA256: o.SHA256}
		opts.DisableContentSha256 = true
	}
	if progress != nil {
		opts.Progress = progress
	}
	return opts
}

// UploadFile uploads the file at localPath to dst. Large files go up in parallel parts.
func (c *Client) UploadFile(ctx context.Context, localPath string, dst URI, opts UploadOptions) error {
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		f, st, err := openForUpload(localPath)
		if err != nil {
			return err
		}
		defer f.Close()
		progress := newProgressReader(opts.Progress, st.Size())
		_, err = c.mc.PutObject(ctx, dst.Bucket, dst.Key, f, st.Size(), opts.putOptions(progress))
		if err != nil {
			progress.reset()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("uploading %s to %s: %w", localPath, dst, err)
	}
	return nil
}

// openForUpload opens a file and describes it; its errors are not worth a retry.
func openForUpload(path string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, Permanent(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, Permanent(err)
	}
	return f, st, nil
}

// PutObject uploads size bytes from r to dst (size -1: read r to its end). The upload is
// retried only if r is an io.Seeker, from its position at the call.
func (c *Client) PutObject(ctx context.Context, dst URI, r io.Reader, size int64, opts UploadOptions) error {
	backoff := c.backoff
	seeker, canSeek := r.(io.Seeker)
	var start int64
	if canSeek {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			canSeek = false
		}
	}
	if !canSeek {
		backoff.Attempts = 1
	}
	progress := newProgressReader(opts.Progress, size)
	attempt := 0
	err := Retry(ctx, backoff, func(ctx context.Context) error {
		if attempt++; attempt > 1 {
			if _, err := seeker.Seek(start, io.SeekStart); err != nil {
				return Permanent(err)
			}
			progress.reset()
		}
		_, err := c.mc.PutObject(ctx, dst.Bucket, dst.Key, r, size, opts.putOptions(progress))
		return err
	})
	if err != nil {
		return fmt.Errorf("uploading %s: %w", dst, err)
	}
	return nil
}

// Stat describes the object at u; the error wraps ErrNotFound if there is none.
func (c *Client) Stat(ctx context.Context, u URI) (Object, error) {
	var obj Object
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		info, err := c.mc.StatObject(ctx, u.Bucket, u.Key, minio.StatObjectOptions{})
		if isNotFound(err) {
			return notFound(u)
		}
		if err != nil {
			return err
		}
		obj = objectFromInfo(u.Bucket, info)
		return nil
	})
	if err != nil {
		return Object{}, fmt.Errorf("checking %s: %w", u, err)
	}
	return obj, nil
}

// Exists reports whether an object is stored at u. Content-addressed uploads call it to
// skip an archive the storage already has.
func (c *Client) Exists(ctx context.Context, u URI) (bool, error) {
	_, err := c.Stat(ctx, u)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// List returns the objects under the prefix u, recursively, in key order. A key that
// is not a prefix lists the objects whose keys start with it.
func (c *Client) List(ctx context.Context, u URI) ([]Object, error) {
	var objs []Object
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		objs = objs[:0]
		for info := range c.mc.ListObjectsIter(ctx, u.Bucket, minio.ListObjectsOptions{Prefix: u.Key, Recursive: true}) {
			if info.Err != nil {
				if isNotFound(info.Err) {
					return Permanent(info.Err)
				}
				return info.Err
			}
			objs = append(objs, objectFromInfo(u.Bucket, info))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", u, err)
	}
	return objs, nil
}

// Any reports whether any object's key starts with the prefix u: one listing of one
// key.
func (c *Client) Any(ctx context.Context, u URI) (bool, error) {
	found := false
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for info := range c.mc.ListObjectsIter(lctx, u.Bucket, minio.ListObjectsOptions{Prefix: u.Key, Recursive: true, MaxKeys: 1}) {
			if info.Err != nil {
				if isNotFound(info.Err) {
					return Permanent(info.Err)
				}
				return info.Err
			}
			found = true
			break
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("listing %s: %w", u, err)
	}
	return found, nil
}

// Remove deletes the objects of one bucket, in batches of a thousand; an object
// already gone is no error.
func (c *Client) Remove(ctx context.Context, bucket string, keys []string) error {
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for _, k := range keys {
			select {
			case objs <- minio.ObjectInfo{Key: k}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for e := range c.mc.RemoveObjects(ctx, bucket, objs, minio.RemoveObjectsOptions{}) {
		if e.Err != nil && !isNotFound(e.Err) {
			errs = append(errs, fmt.Errorf("deleting s3://%s/%s: %w", bucket, e.ObjectName, e.Err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Download writes the object at u to w. It is retried as long as nothing was written.
func (c *Client) Download(ctx context.Context, u URI, w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		if cw.n > 0 {
			return Permanent(errors.New("interrupted after the first bytes"))
		}
		return c.copyObject(ctx, u, cw)
	})
	if err != nil {
		return cw.n, fmt.Errorf("downloading %s: %w", u, err)
	}
	return cw.n, nil
}

// GetJSON decodes the JSON document at u into v: false, and no error, when there is
// no object at u.
func (c *Client) GetJSON(ctx context.Context, u URI, v any) (bool, error) {
	var buf bytes.Buffer
	if _, err := c.Download(ctx, u, &buf); errors.Is(err, ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		return false, fmt.Errorf("reading %s: %w", u, err)
	}
	return true, nil
}

// DownloadFile writes the object at u to localPath, through a temporary file renamed
// into place once complete, so that an interrupted download never leaves a partial file.
// Every attempt starts over.
func (c *Client) DownloadFile(ctx context.Context, u URI, localPath string) error {
	err := Retry(ctx, c.backoff, func(ctx context.Context) error {
		return c.downloadFileOnce(ctx, u, localPath)
	})
	if err != nil {
		return fmt.Errorf("downloading %s to %s: %w", u, localPath, err)
	}
	return nil
}

// downloadFileOnce makes one attempt of DownloadFile.
func (c *Client) downloadFileOnce(ctx context.Context, u URI, localPath string) error {
	tmp := localPath + ".tfk8s-part"
	f, err := os.Create(tmp)
	if err != nil {
		return Permanent(err)
	}
	err = c.copyObject(ctx, u, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = Permanent(cerr)
	}
	if err == nil {
		err = os.Rename(tmp, localPath)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// copyObject streams the object at u into w once.
func (c *Client) copyObject(ctx context.Context, u URI, w io.Writer) error {
	obj, err := c.mc.GetObject(ctx, u.Bucket, u.Key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	if _, err := io.Copy(w, obj); err != nil {
		if isNotFound(err) {
			return notFound(u)
		}
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			return Permanent(err)
		}
		return err
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// objectFromInfo converts minio-go's description of an object.
func objectFromInfo(bucket string, info minio.ObjectInfo) Object {
	sha := info.UserMetadata[metaSHA256]
	if sha == "" {
		sha = info.Metadata.Get("X-Amz-Meta-" + metaSHA256)
	}
	return Object{
		URI:     URI{Bucket: bucket, Key: info.Key},
		Size:    info.Size,
		ModTime: info.LastModified,
		ETag:    strings.Trim(info.ETag, `"`),
		SHA256:  sha,
	}
}
