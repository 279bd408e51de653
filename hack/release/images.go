package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tfk8s/tfk8s/hack/images/ociimage"
)

// releasedImages are the image layouts a release pushes, from _out/images of its
// build: tfk8s's own (multi-arch, tagged with the version) and the Python images
// (tagged with what they hold).
var releasedImages = []string{"tfk8s-controller", "tfk8s-agent", "tfk8s-dashboard", "python", "tensorflow", "jupyter"}

// buildAndPushImages builds the images with make into the release's build directory,
// so that the layouts of make images in _out/ stay as they were, and pushes each.
func buildAndPushImages(ctx context.Context, o options) ([]artefact, error) {
	out, err := filepath.Abs(o.buildDir())
	if err != nil {
		return nil, err
	}
	targets, images := []string{"images", "tensorflow-image"}, releasedImages
	if o.gpuImage {
		// Its layout's blobs are hard links to make's cache: no copy of its 4 GB.
		targets, images = append(targets, "tensorflow-gpu-image"), append(images, "tensorflow-gpu")
	}
	cmd := exec.CommandContext(ctx, o.make, append(append([]string{"--no-print-directory"}, targets...),
		"VERSION="+o.version, "REVISION="+o.revision, "IMAGE_REPO="+o.registry, "OUT="+out)...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("make %s: %w", strings.Join(targets, " "), err)
	}
	var done []artefact
	for _, image := range images {
		a, err := pushImage(ctx, filepath.Join(out, "images", image), o.registry)
		if err != nil {
			return nil, err
		}
		done = append(done, a)
	}
	return done, nil
}

// pushImage pushes the layout in dir to the registry and returns what it pushed.
func pushImage(ctx context.Context, dir, registry string) (artefact, error) {
	ref, err := ociimage.LayoutRef(dir)
	if err != nil {
		return artefact{}, err
	}
	dst, err := releaseReference(registry, filepath.Base(dir), ref)
	if err != nil {
		return artefact{}, err
	}
	idx, err := ociimage.ReadLayout(dir)
	if err != nil {
		return artefact{}, err
	}
	sizes, err := ociimage.CompressedSizes(idx)
	if err != nil {
		return artefact{}, fmt.Errorf("%s: %w", dir, err)
	}
	if err := ociimage.Push(ctx, idx, dst); err != nil {
		return artefact{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return artefact{}, err
	}
	fmt.Printf("pushed %s@%s\n", dst, digest)
	return artefact{name: dst, size: sizes.String()}, nil
}

// releaseReference is where a layout named ref goes in the registry: a bare tag (make
// images' "v0.1.0") as REGISTRY/NAME:TAG, a full reference (make tensorflow-image's
// "ghcr.io/tfk8s/python:3.11") as REGISTRY/<its last path element>:<its tag>.
func releaseReference(registry, layoutName, ref string) (string, error) {
	if !strings.ContainsAny(ref, "/:") {
		return registry + "/" + layoutName + ":" + ref, nil
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("the layout %s names %q: %w", layoutName, ref, err)
	}
	repo := tag.RepositoryStr()
	return registry + "/" + repo[strings.LastIndex(repo, "/")+1:] + ":" + tag.TagStr(), nil
}
