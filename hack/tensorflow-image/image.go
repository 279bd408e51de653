package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tfk8s/tfk8s/internal/images"
)

// Annotations of the layout's index.json: the image's reference, and the key of what it
// was built from, which a second run compares to do nothing.
const (
	refNameAnnotation = "org.opencontainers.image.ref.name"
	keyAnnotation     = "io.tfk8s.tensorflow-image.key"
	// loadAnnotation "explicit" asks tfk8s local up to leave the image out of what it
	// pushes from _out/images: the GPU image's 4 GB go into a local cluster only when
	// named (tfk8s local load _out/images/tensorflow-gpu).
	loadAnnotation = "io.tfk8s.local.load"
)

// source is the org.opencontainers.image.source label of both images.
const source = "https://github.com/tfk8s/tfk8s"

// imageSpec is one image to write: its reference, title, and layers on top of each other;
// and, where not root in / running python3, its user, working directory, added
// environment and command.
type imageSpec struct {
	ref, title, description string
	layers                  []*layerFile
	user, workDir           string
	env, cmd                []string
	// explicitLoad marks the layout for loading into a local cluster only on request.
	explicitLoad bool
}

// buildImage is the linux/amd64 image of spec, in an image index of its own, as the
// other tfk8s images are: config with PATH, python3 as the command, the labels.
func buildImage(spec imageSpec) (v1.ImageIndex, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, lf := range spec.layers {
		l, err := lf.Layer()
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer: l, MediaType: types.OCILayer,
			History: v1.History{CreatedBy: "tfk8s make tensorflow-image", Comment: filepath.Base(lf.Path), Created: v1.Time{Time: epoch}},
		})
		if err != nil {
			return nil, fmt.Errorf("adding a layer to %s: %w", spec.ref, err)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}, spec.env...)
	cfg.Config.Cmd = spec.cmd
	if cfg.Config.Cmd == nil {
		cfg.Config.Cmd = []string{"python3"}
	}
	cfg.Config.WorkingDir = cmp.Or(spec.workDir, "/")
	cfg.Config.User = spec.user
	cfg.Config.Labels = spec.labels()
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: epoch}); err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
		Add:        img,
		Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}, Annotations: spec.labels()},
	})
	return mutate.Annotations(idx, spec.labels()).(v1.ImageIndex), nil
}

// labels are the OCI annotations the image, its config and its index carry.
func (s imageSpec) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       s.title,
		"org.opencontainers.image.description": s.description,
		"org.opencontainers.image.ref.name":    s.ref,
		"org.opencontainers.image.source":      source,
	}
}

// writeLayout writes idx as an OCI layout in dir, replacing it, its index.json
// annotated with the full reference and the build key. The layers' blobs are hard
// links to the cached files where the file system allows (the layout skips blobs it
// has): the GPU image's 3 GB are not copied.
func writeLayout(dir string, idx v1.ImageIndex, spec imageSpec, key string) error {
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	p, err := layout.Write(tmp, empty.Index)
	if err == nil {
		linkBlobs(tmp, spec.layers)
	}
	if err == nil {
		annotations := map[string]string{refNameAnnotation: spec.ref, keyAnnotation: key}
		if spec.explicitLoad {
			annotations[loadAnnotation] = "explicit"
		}
		err = p.AppendIndex(idx, layout.WithAnnotations(annotations))
	}
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// linkBlobs hard-links the layers' files into the layout in dir; those it cannot are
// copied by the layout's writer.
func linkBlobs(dir string, layers []*layerFile) {
	blobs := filepath.Join(dir, "blobs", "sha256")
	if os.MkdirAll(blobs, 0o755) != nil {
		return
	}
	for _, l := range layers {
		_ = os.Link(l.Path, filepath.Join(blobs, l.Sum.Hex))
	}
}

// layoutKey is the build key in dir's index.json, "" when there is none; the layout
// counts only when the blobs of its image are there too.
func layoutKey(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return ""
	}
	var m v1.IndexManifest
	if json.Unmarshal(data, &m) != nil || len(m.Manifests) != 1 {
		return ""
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return ""
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return ""
	}
	inner, err := idx.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return ""
	}
	im, err := inner.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		return ""
	}
	img, err := inner.Image(im.Manifests[0].Digest)
	if err != nil {
		return ""
	}
	layers, err := img.Layers()
	if err != nil {
		return ""
	}
	for _, l := range layers {
		d, _ := l.Digest()
		size, _ := l.Size()
		if st, err := os.Stat(filepath.Join(dir, "blobs", d.Algorithm, d.Hex)); err != nil || st.Size() != size {
			return ""
		}
	}
	return m.Manifests[0].Annotations[keyAnnotation]
}

// pythonSpec and tensorFlowSpec describe the two images TFJobs run in.
func pythonSpec(base *layerFile) imageSpec {
	return imageSpec{ref: images.Python, title: "python",
		description: "Debian " + suite + " (minbase) with python3: tfk8s's image for programs with no dependencies",
		layers:      []*layerFile{base}}
}

func tensorFlowSpec(base, tf *layerFile) imageSpec {
	return imageSpec{ref: images.TensorFlow, title: "tensorflow",
		description: "Debian " + suite + " (minbase), python3, tensorflow-cpu 2.21.0, tf-keras and tensorboard",
		layers:      []*layerFile{base, tf}}
}
