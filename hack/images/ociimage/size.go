package ociimage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Sizes maps each platform of an index ("linux/amd64") to what a node downloads to
// run it: the manifest's config and layers, compressed.
type Sizes map[string]int64

// String reads "linux/amd64 9.8 MB, linux/arm64 9.1 MB" in the index's order.
func (s Sizes) String() string {
	var parts []string
	for _, p := range sortedKeys(s) {
		parts = append(parts, fmt.Sprintf("%s %.1f MB", p, float64(s[p])/1e6))
	}
	return strings.Join(parts, ", ")
}

// CompressedSizes sums the compressed layers and config of each platform's image.
func CompressedSizes(idx v1.ImageIndex) (Sizes, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the index: %w", err)
	}
	sizes := Sizes{}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading image %s: %w", d.Digest, err)
		}
		mf, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("reading manifest %s: %w", d.Digest, err)
		}
		total := mf.Config.Size
		for _, l := range mf.Layers {
			total += l.Size
		}
		sizes[d.Platform.String()] = total
	}
	return sizes, nil
}

func sortedKeys(m Sizes) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.Sort(keys)
	return keys
}
