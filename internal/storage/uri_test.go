package storage

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseURI(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    URI
		wantErr string
	}{
		{name: "object", in: "s3://bucket/code/sha256-ab.tar.gz", want: URI{Bucket: "bucket", Key: "code/sha256-ab.tar.gz"}},
		{name: "prefix", in: "s3://bucket/datasets/mnist/", want: URI{Bucket: "bucket", Key: "datasets/mnist/"}},
		{name: "bucket only", in: "s3://bucket", want: URI{Bucket: "bucket"}},
		{name: "bucket and slash", in: "s3://bucket/", want: URI{Bucket: "bucket"}},
		{name: "no scheme", in: "bucket/key", wantErr: `"bucket/key": must start with s3://`},
		{name: "other scheme", in: "gs://bucket/key", wantErr: "must start with s3://"},
		{name: "no bucket", in: "s3:///key", wantErr: "missing bucket name"},
		{name: "upper-case bucket", in: "s3://Bucket/key", wantErr: `bucket name "Bucket" has an invalid character 'B'`},
		{name: "short bucket", in: "s3://ab/key", wantErr: "3 to 63 characters"},
		{name: "dot-dot segment", in: "s3://bucket/a/../b", wantErr: `must not contain ".." segments`},
		{name: "leading slash in key", in: "s3://bucket//key", wantErr: "key must not start with /"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseURI(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseURI(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseURI(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseURI(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestURIJoin(t *testing.T) {
	tests := []struct {
		name string
		base string
		elem []string
		want string
	}{
		{name: "prefix and path", base: "s3://b1b/runs/", elem: []string{"ns", "job", "worker-0", "artifacts", "workspace/model/ckpt"}, want: "s3://b1b/runs/ns/job/worker-0/artifacts/workspace/model/ckpt"},
		{name: "prefix without slash", base: "s3://b1b/runs", elem: []string{"x"}, want: "s3://b1b/runs/x"},
		{name: "empty key", base: "s3://b1b", elem: []string{"/workspace/a"}, want: "s3://b1b/workspace/a"},
		{name: "trailing slash kept", base: "s3://b1b/runs", elem: []string{"logs/"}, want: "s3://b1b/runs/logs/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MustParseURI(tc.base).Join(tc.elem...).String()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Join (-want +got):\n%s", diff)
			}
		})
	}
}
