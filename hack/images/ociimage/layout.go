package ociimage

import (
	"context"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// WriteLayout writes idx as an OCI layout in dir, replacing what dir held: the
// layout's index.json names the one image index ref (org.opencontainers.image.ref.name),
// a tag or a full reference, as ko and crane write a multi-platform image, so that make
// push or any OCI tool (crane, skopeo, oras) takes the directory as one image.
func WriteLayout(dir string, idx v1.ImageIndex, ref string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout reads the image index an OCI layout in dir holds (WriteLayout's).
func ReadLayout(dir string) (v1.ImageIndex, error) {
	outer, d, err := readLayoutIndex(dir)
	if err != nil {
		return nil, err
	}
	return outer.ImageIndex(d.Digest)
}

// readLayoutIndex returns the layout's index.json and the descriptor of the one image
// index it names.
func readLayoutIndex(dir string) (v1.ImageIndex, v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		return nil, v1.Descriptor{}, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	m, err := outer.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		return nil, v1.Descriptor{}, fmt.Errorf("reading the OCI layout %s: want one image index in it (%v)", dir, err)
	}
	return outer, m.Manifests[0], nil
}

// Push pushes idx, every platform's image with it, to ref (registry/repository:tag).
// Credentials come from the Docker config (~/.docker/config.json), as docker login
// writes it; a registry on loopback is spoken to over plain HTTP.
func Push(ctx context.Context, idx v1.ImageIndex, ref string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("parsing the image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// LayoutRef is the reference the OCI layout in dir names its image index by
// (org.opencontainers.image.ref.name): a tag, as make images writes, or a full
// reference, as make tensorflow-image writes.
func LayoutRef(dir string) (string, error) {
	_, d, err := readLayoutIndex(dir)
	if err != nil {
		return "", err
	}
	ref := d.Annotations["org.opencontainers.image.ref.name"]
	if ref == "" {
		return "", fmt.Errorf("the OCI layout %s names no reference (org.opencontainers.image.ref.name)", dir)
	}
	return ref, nil
}
