package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Annotations of an OCI layout's index.json that name an image.
const (
	// annotationRefName is the OCI image spec's: a tag, or (as this repository's
	// images and containerd's exports write it) a full reference.
	annotationRefName = "org.opencontainers.image.ref.name"
	// annotationContainerdName is containerd's (docker save since Docker 25 writes
	// it), always a full reference; its ref.name is then only the tag.
	annotationContainerdName = "io.containerd.image.name"
)

// DefaultRepository is the repository prefix of this repository's images: a layout
// annotated with a bare tag names ghcr.io/tfk8s/<directory name>:<tag>.
const DefaultRepository = "ghcr.io/tfk8s"

// tagPattern is a tag's grammar in the OCI distribution spec.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// image is one image to push: where it was read, the reference pods name it by (nil
// when nothing names it: `local load --name` must), and its content, a v1.Image or a
// v1.ImageIndex.
type image struct {
	source  string
	ref     name.Reference
	content remote.Taggable
}

// parseReference parses a reference as the node does: a bare name is docker.io's
// (docker.io/library/busybox), written out in full.
func parseReference(ref string) (name.Reference, error) {
	return name.ParseReference(ref, name.WithDefaultRegistry("docker.io"))
}

// displayName is ref as users write it: docker.io's images as docker.io/..., not
// index.docker.io/... as the registry's API host is called.
func displayName(ref name.Reference) string {
	n := ref.Name()
	if rest, ok := strings.CutPrefix(n, name.DefaultRegistry+"/"); ok {
		return "docker.io/" + rest
	}
	return n
}

// layoutReference is the reference an index.json descriptor's annotations give an
// image of the layout in the directory dirName: containerd's full name if present;
// else ref.name, a full reference, or a bare tag meaning
// ghcr.io/tfk8s/<dirName>:<tag>. An image with neither annotation has no name (nil).
func layoutReference(annotations map[string]string, dirName string) (name.Reference, error) {
	if full := annotations[annotationContainerdName]; full != "" {
		return parseReference(full)
	}
	ref := annotations[annotationRefName]
	switch {
	case ref == "":
		return nil, nil
	case tagPattern.MatchString(ref):
		return parseReference(DefaultRepository + "/" + dirName + ":" + ref)
	default:
		return parseReference(ref)
	}
}

// readLayout returns the images the OCI layout in dir names in its index.json, each
// an image or an image index; dirName is the name a bare tag is a tag of.
func readLayout(dir, dirName string) ([]image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading the OCI layout %s: %w", dir, err)
	}
	var images []image
	for _, d := range m.Manifests {
		ref, err := layoutReference(d.Annotations, dirName)
		if err != nil {
			return nil, fmt.Errorf("OCI layout %s, image %s: %w", dir, d.Digest, err)
		}
		content, err := layoutContent(idx, d)
		if err != nil {
			return nil, fmt.Errorf("OCI layout %s, image %s: %w", dir, d.Digest, err)
		}
		images = append(images, image{source: dir, ref: ref, content: content})
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("the OCI layout %s holds no image", dir)
	}
	return images, nil
}

// layoutContent is the image or image index d describes.
func layoutContent(idx v1.ImageIndex, d v1.Descriptor) (remote.Taggable, error) {
	switch {
	case d.MediaType.IsIndex():
		return idx.ImageIndex(d.Digest)
	case d.MediaType.IsImage():
		return idx.Image(d.Digest)
	default:
		return nil, fmt.Errorf("media type %q is neither an image nor an image index", d.MediaType)
	}
}

// isLayout reports whether dir is an OCI image layout: it has an index.json.
func isLayout(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "index.json"))
	return err == nil
}

// layoutsIn returns the images of dir, an OCI layout or a directory of layouts (its
// subdirectories that are not layouts, or are loaded only on request, are skipped).
func layoutsIn(dir string) ([]image, error) {
	if isLayout(dir) {
		return readLayout(dir, filepath.Base(dir))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the image directory: %w", err)
	}
	var images []image
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if !e.IsDir() || !isLayout(sub) || loadsOnRequest(sub) {
			continue
		}
		found, err := readLayout(sub, e.Name())
		if err != nil {
			return nil, err
		}
		images = append(images, found...)
	}
	return images, nil
}

// imageDirs are the directories Up pushes the layouts of, each once: _out/images of
// the source tree whose bin/ holds the binaries, when it exists, and Options.Images,
// which must.
func imageDirs(opts Options) ([]string, error) {
	var dirs []string
	if opts.BinDir != "" {
		tree := filepath.Join(filepath.Dir(opts.BinDir), "_out", "images")
		if _, err := os.Stat(tree); err == nil {
			dirs = append(dirs, tree)
		}
	}
	for _, dir := range opts.Images {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--images %s: no such directory", dir)
		} else if err != nil {
			return nil, fmt.Errorf("--images %s: %w", dir, err)
		}
		if abs, err := filepath.Abs(dir); err == nil && !slices.Contains(dirs, abs) {
			dirs = append(dirs, abs)
		}
	}
	return dirs, nil
}
