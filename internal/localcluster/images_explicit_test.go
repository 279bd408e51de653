package localcluster

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// TestLayoutsLoadedOnRequest: up's scan of _out/images leaves out a layout marked
// for explicit loading (the CUDA image), which loads when named itself.
func TestLayoutsLoadedOnRequest(t *testing.T) {
	dir := t.TempDir()
	for name, annotations := range map[string]map[string]string{
		"tensorflow":     {annotationRefName: "ghcr.io/tfk8s/tensorflow:2.21.0-cpu"},
		"tensorflow-gpu": {annotationRefName: "ghcr.io/tfk8s/tensorflow:2.21.0-gpu", explicitLoadAnnotation: "explicit"},
	} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := layout.Write(filepath.Join(dir, name), empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(annotations)); err != nil {
			t.Fatal(err)
		}
	}
	names := func(path string) []string {
		images, err := layoutsIn(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, img := range images {
			out = append(out, img.ref.Name())
		}
		return out
	}
	if diff := cmp.Diff([]string{"ghcr.io/tfk8s/tensorflow:2.21.0-cpu"}, names(dir)); diff != "" {
		t.Errorf("the directory's images (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ghcr.io/tfk8s/tensorflow:2.21.0-gpu"}, names(filepath.Join(dir, "tensorflow-gpu"))); diff != "" {
		t.Errorf("the GPU layout named itself (-want +got):\n%s", diff)
	}
}
