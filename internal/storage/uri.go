// Package storage is tfk8s's access to S3-compatible object storage: URIs of the form
// s3://bucket/key, the resolution of endpoint and credentials, and a Client that uploads,
// downloads, lists and incrementally syncs objects, retrying transient errors with a
// bounded exponential backoff.
package storage

import (
	"fmt"
	"path"
	"strings"
)

// URI names an S3 object, or a prefix when its key is empty or ends with "/".
type URI struct {
	// Bucket is the bucket name.
	Bucket string
	// Key is the object key or prefix, without a leading slash.
	Key string
}

// ParseURI parses s3://bucket/key. The key may be empty (the whole bucket) or end with
// "/" (a prefix).
func ParseURI(s string) (URI, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return URI{}, fmt.Errorf("parsing S3 URI %q: must start with s3://", s)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return URI{}, fmt.Errorf("parsing S3 URI %q: missing bucket name", s)
	}
	if err := validateBucket(bucket); err != nil {
		return URI{}, fmt.Errorf("parsing S3 URI %q: %w", s, err)
	}
	if strings.HasPrefix(key, "/") {
		return URI{}, fmt.Errorf("parsing S3 URI %q: key must not start with /", s)
	}
	for _, part := range strings.Split(key, "/") {
		if part == "." || part == ".." {
			return URI{}, fmt.Errorf("parsing S3 URI %q: key must not contain %q segments", s, part)
		}
	}
	return URI{Bucket: bucket, Key: key}, nil
}

// MustParseURI is ParseURI for constants known to be valid; it panics on error.
func MustParseURI(s string) URI {
	u, err := ParseURI(s)
	if err != nil {
		panic(err)
	}
	return u
}

// validateBucket checks the S3 bucket naming rules that matter for addressing.
func validateBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q must have 3 to 63 characters", b)
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("bucket name %q has an invalid character %q (lower-case letters, digits, '-' and '.' only)", b, c)
		}
		if (i == 0 || i == len(b)-1) && (c == '-' || c == '.') {
			return fmt.Errorf("bucket name %q must start and end with a letter or digit", b)
		}
	}
	return nil
}

// String returns the URI as s3://bucket/key.
func (u URI) String() string {
	return "s3://" + u.Bucket + "/" + u.Key
}

// IsPrefix reports whether the URI names a prefix: an empty key or one ending with "/".
func (u URI) IsPrefix() bool {
	return u.Key == "" || strings.HasSuffix(u.Key, "/")
}

// Dir returns the URI as a prefix, with a trailing "/" unless the key is empty.
func (u URI) Dir() URI {
	if u.IsPrefix() {
		return u
	}
	return URI{Bucket: u.Bucket, Key: u.Key + "/"}
}

// Join appends slash-separated elements to the key. Leading and trailing slashes of the
// elements are dropped; a trailing slash of the last element is kept, so that joining
// a prefix stays a prefix.
func (u URI) Join(elem ...string) URI {
	parts := []string{}
	if k := strings.Trim(u.Key, "/"); k != "" {
		parts = append(parts, k)
	}
	trailing := false
	for _, e := range elem {
		trailing = strings.HasSuffix(e, "/")
		if e = strings.Trim(e, "/"); e != "" {
			parts = append(parts, e)
		}
	}
	key := path.Join(parts...)
	if trailing && key != "" {
		key += "/"
	}
	return URI{Bucket: u.Bucket, Key: key}
}
