package registryserver

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// BuiltIndex returns the image index of an OCI layout that tfk8s's image builds write
// (_out/images/NAME: one index per image, holding its platforms), failing the test with
// the make target to run when there is none.
func BuiltIndex(t testing.TB, dir string) v1.ImageIndex {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("no image %s (make tensorflow-image builds it): %v", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("reading %s: want one image index in it (%v)", dir, err)
	}
	inner, err := idx.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return inner
}
