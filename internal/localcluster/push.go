package localcluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tfk8s/tfk8s/internal/storage"
)

// localReference is ref in the cluster's registry at addr: the same repository path
// (a docker.io name's under library/) and tag or digest, where the node, which mirrors
// every registry to it, looks for ref first.
func localReference(ref name.Reference, addr string) (name.Reference, error) {
	sep := ":"
	if _, ok := ref.(name.Digest); ok {
		sep = "@"
	}
	return name.ParseReference(addr+"/"+ref.Context().RepositoryStr()+sep+ref.Identifier(), name.Insecure)
}

// pushImage pushes img into the registry at addr, as cred, under its local reference, and
// writes a line saying what it pushed: the reference, where it went with its digest,
// its size, how much of it was sent (blobs the registry has are not sent again) and
// how long it took.
func pushImage(ctx context.Context, img image, addr string, cred registryCredential, out io.Writer) error {
	dst, err := localReference(img.ref, addr)
	if err != nil {
		return fmt.Errorf("pushing %s from %s: %w", displayName(img.ref), img.source, err)
	}
	digest, size, err := digestAndSize(img.content)
	if err != nil {
		return fmt.Errorf("reading %s from %s: %w", displayName(img.ref), img.source, err)
	}
	start := time.Now()
	sent := &countingTransport{base: remote.DefaultTransport}
	if err := remote.Push(dst, img.content, remote.WithContext(ctx), remote.WithTransport(sent), remote.WithAuth(cred.authenticator())); err != nil {
		return fmt.Errorf("pushing %s from %s: %w", displayName(img.ref), img.source, err)
	}
	fmt.Fprintf(out, "pushed %s as %s (digest %s, %s, %s sent, %.1fs)\n", displayName(img.ref), dst, digest,
		storage.FormatBytes(size), storage.FormatBytes(sent.bytes.Load()), time.Since(start).Seconds())
	return nil
}

// digestAndSize returns the digest of an image or image index and its size: its
// manifest's, config's and compressed layers', every platform's for an index.
func digestAndSize(t remote.Taggable) (v1.Hash, int64, error) {
	switch c := t.(type) {
	case v1.Image:
		digest, err := c.Digest()
		if err != nil {
			return digest, 0, err
		}
		size, err := imageSize(c)
		return digest, size, err
	case v1.ImageIndex:
		digest, err := c.Digest()
		if err != nil {
			return digest, 0, err
		}
		m, err := c.IndexManifest()
		if err != nil {
			return digest, 0, err
		}
		size, err := c.Size()
		for _, d := range m.Manifests {
			if err != nil {
				break
			}
			var child remote.Taggable
			if d.MediaType.IsIndex() {
				child, err = c.ImageIndex(d.Digest)
			} else {
				child, err = c.Image(d.Digest)
			}
			var n int64
			if err == nil {
				_, n, err = digestAndSize(child)
			}
			size += n
		}
		return digest, size, err
	default:
		return v1.Hash{}, 0, fmt.Errorf("%T is neither an image nor an image index", t)
	}
}

// imageSize is the size of an image's manifest, config and compressed layers.
func imageSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	size, err := img.Size()
	size += m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, err
}

// countingTransport counts the bytes of blob uploads it sends: what a push cost.
type countingTransport struct {
	base  http.RoundTripper
	bytes atomic.Int64
}

// RoundTrip counts the body of PATCH and PUT requests to a blob upload as it is read.
func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && (req.Method == http.MethodPatch || req.Method == http.MethodPut) &&
		strings.Contains(req.URL.Path, "/blobs/uploads/") {
		req = req.Clone(req.Context())
		req.Body = &countingReader{ReadCloser: req.Body, n: &t.bytes}
	}
	return t.base.RoundTrip(req)
}

// countingReader adds what is read through it to n.
type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
