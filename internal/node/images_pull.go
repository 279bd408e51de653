package node

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pull resolves ref (through its mirror first), fetches the blobs of the node's
// platform's image that the cache lacks, unpacks the image unless its root exists,
// and records what ref resolved to. Pulls of one reference wait for each other; waited
// is how long this one did.
func (s *imageStore) pull(ctx context.Context, ref name.Reference, kc authn.Keychain) (img *image, waited time.Duration, err error) {
	start := time.Now()
	defer s.lock("pull " + ref.Name())()
	waited = time.Since(start)
	img, err = s.fetch(ctx, ref, kc)
	return img, waited, err
}

// fetch pulls ref: see pull.
func (s *imageStore) fetch(ctx context.Context, ref name.Reference, kc authn.Keychain) (*image, error) {
	desc, err := s.resolve(ctx, ref, kc)
	if err != nil {
		return nil, err
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("choosing the %s image of %s: %w", platformString(s.platform), ref, err)
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(rawManifest))
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of %s: %w", ref, err)
	}
	if err := s.saveBlob(manifestDigest, func() ([]byte, error) { return rawManifest, nil }); err != nil {
		return nil, err
	}
	if err := s.saveBlob(m.Config.Digest, img.RawConfigFile); err != nil {
		return nil, fmt.Errorf("fetching the config of %s: %w", ref, err)
	}
	if err := s.fetchLayers(ctx, img, ref); err != nil {
		return nil, err
	}
	var layers []v1.Hash
	for _, l := range m.Layers {
		layers = append(layers, l.Digest)
	}
	if _, err := s.unpackOnce(m.Config.Digest, layers); err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", ref, err)
	}
	rec := imageRecord{Reference: ref.Name(), Digest: desc.Digest, Manifest: manifestDigest}
	if err := s.writeRecord(ref, rec); err != nil {
		return nil, err
	}
	return s.cachedImage(ref, rec)
}

// resolve fetches ref's descriptor from each of its sources in turn; the errors of
// all are returned if none has it.
func (s *imageStore) resolve(ctx context.Context, ref name.Reference, kc authn.Keychain) (*remote.Descriptor, error) {
	sources := pullSources(ref, s.mirrors)
	var msgs []string
	for i, src := range sources {
		desc, err := remote.Get(src, remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithPlatform(s.platform))
		if err == nil {
			return desc, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if i < len(sources)-1 {
			msgs = append(msgs, fmt.Sprintf("mirror %s: %v", src.Context().RegistryStr(), err))
		} else {
			msgs = append(msgs, err.Error())
		}
	}
	return nil, fmt.Errorf("%s", strings.Join(msgs, "; then "))
}

// saveBlob caches the blob h unless it is there, verifying its digest.
func (s *imageStore) saveBlob(h v1.Hash, read func() ([]byte, error)) error {
	if s.hasBlob(h) {
		return nil
	}
	data, err := read()
	if err != nil {
		return err
	}
	if got, _, err := v1.SHA256(bytes.NewReader(data)); err != nil || got != h {
		return fmt.Errorf("blob %s has digest %s", h, got)
	}
	return s.writeFile(s.blobPath(h), bytes.NewReader(data))
}

// fetchLayers downloads the compressed layers of img that the cache lacks; the
// registry client verifies each one's digest as it reads it.
func (s *imageStore) fetchLayers(ctx context.Context, img v1.Image, ref name.Reference) error {
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("listing the layers of %s: %w", ref, err)
	}
	for _, l := range layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := l.Digest()
		if err != nil {
			return fmt.Errorf("reading a layer digest of %s: %w", ref, err)
		}
		if s.hasBlob(d) {
			continue
		}
		rc, err := l.Compressed()
		if err != nil {
			return fmt.Errorf("fetching layer %s of %s: %w", d, ref, err)
		}
		err = s.writeFile(s.blobPath(d), rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("fetching layer %s of %s: %w", d, ref, err)
		}
	}
	return nil
}

func platformString(p v1.Platform) string { return p.OS + "/" + p.Architecture }
