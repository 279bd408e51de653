// Package ociimage builds the tfk8s images without Docker and without a base image to
// pull: each is an empty image plus one layer holding a static binary, with a config that
// runs it as the non-root user 65532, one image per platform, joined in an OCI image
// index. go-containerregistry writes them as OCI layouts and pushes them to a registry.
package ociimage

import (
	"archive/tar"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the uid:gid a tfk8s image runs as unless its Spec says otherwise: the
// "nonroot" user of distroless images, so that a restricted Pod Security level admits
// the pods.
const User = "65532:65532"

// BinDir is where an image keeps its binary; PATH names it, so that a pod's command
// may name the binary alone (the agent's init container runs "tfk8s-agent install").
const BinDir = "/usr/local/bin"

// Spec describes one image: a binary per platform and the labels it carries.
type Spec struct {
	// Name is the binary's file name and the image's title, e.g. "tfk8s-agent".
	Name string
	// Binaries maps a linux architecture ("amd64", "arm64") to the path of the
	// static binary built for it.
	Binaries map[string]string
	// Extra names binaries that go beside the first, from the same directory as
	// each architecture's: the agent's tfk8s-nvml, which its install copies with it.
	Extra []string
	// Version, Revision and Source become the image's OCI labels.
	Version, Revision, Source string
	// User is the uid:gid the image runs as; empty means User.
	User string
}

// Labels are the OCI annotations every image and the index carry.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    s.Name,
		"org.opencontainers.image.version":  s.Version,
		"org.opencontainers.image.revision": s.Revision,
		"org.opencontainers.image.source":   s.Source,
	}
}

// Build returns the image index of spec: one image per architecture, in the order of
// archs.
func Build(spec Spec, archs []string) (v1.ImageIndex, error) {
	if len(archs) == 0 {
		return nil, fmt.Errorf("building %s: no architecture given", spec.Name)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range archs {
		path, ok := spec.Binaries[arch]
		if !ok {
			return nil, fmt.Errorf("building %s: no binary for linux/%s", spec.Name, arch)
		}
		img, err := platformImage(spec, arch, path)
		if err != nil {
			return nil, fmt.Errorf("building %s for linux/%s: %w", spec.Name, arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				Platform:    &v1.Platform{OS: "linux", Architecture: arch},
				Annotations: spec.Labels(),
			},
		})
	}
	return mutate.Annotations(idx, spec.Labels()).(v1.ImageIndex), nil
}

// platformImage is the image of one architecture: the binary's layer on an empty base.
func platformImage(spec Spec, arch, binary string) (v1.Image, error) {
	layer, err := binaryLayer(binary, append([]string{spec.Name}, spec.Extra...))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "tfk8s make images", Comment: spec.Name + " " + spec.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the binary's layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.User = cmp.Or(spec.User, User)
	cfg.Config.Entrypoint = []string{BinDir + "/" + spec.Name}
	cfg.Config.Env = []string{"PATH=" + BinDir + ":/usr/bin:/bin"}
	cfg.Config.Labels = spec.Labels()
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("writing the config: %w", err)
	}
	// A fixed creation time: the same binary gives the same digest.
	return mutate.CreatedAt(img, v1.Time{Time: time.Unix(0, 0).UTC()})
}

// binaryLayer is a gzipped tar of the binary at BinDir/names[0], and of the others
// named beside it in binary's directory, mode 0755, owned by root (the user runs
// them, and cannot change them), with their parent directories.
func binaryLayer(binary string, names []string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for i, name := range names {
		path := binary
		if i > 0 {
			path = filepath.Join(filepath.Dir(binary), name)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the binary: %w", err)
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: BinDir[1:] + "/" + name, Mode: 0o755, Size: int64(len(data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	tarBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
