package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Load pushes the images at paths (OCI layout directories, OCI archives, docker save
// tarballs) into the registry of the running cluster in opts.Dir (at the port its
// cluster.yaml says), a line each to out;
// under the reference ref if it is not empty, which then names the one image. Every
// path is read before anything is pushed, so that a wrong one pushes nothing.
func Load(ctx context.Context, opts Options, paths []string, ref string, out io.Writer) error {
	opts, err := resolve(opts)
	if err != nil {
		return err
	}
	if err := registryAnswers(ctx, opts); err != nil {
		return err
	}
	// OCI archives are unpacked here: $TMPDIR, else /tmp.
	tmp, err := os.MkdirTemp("", "tfk8s-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var images []image
	for _, path := range paths {
		found, err := readImages(path, tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		images = append(images, found...)
	}
	if images, err = nameImages(images, ref); err != nil {
		return err
	}
	for _, img := range images {
		if err := pushImage(ctx, img, registryAddr(opts), out); err != nil {
			return err
		}
	}
	return nil
}

// registryAnswers checks that the cluster in opts.Dir was created and that its
// registry answers, at the port its settings say.
func registryAnswers(ctx context.Context, opts Options) error {
	saved, err := loadSettings(pathsIn(opts.Dir).clusterState)
	if err != nil {
		return err
	}
	if saved == nil {
		return fmt.Errorf("there is no local cluster in %s: run tfk8s local up%s", opts.Dir, dirFlag(opts.Dir))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := httpOK(ctx, registryURL(opts)+"/v2/"); err != nil {
		return fmt.Errorf("the local cluster in %s is not up, its registry does not answer (%w): run tfk8s local up%s", opts.Dir, err, dirFlag(opts.Dir))
	}
	return nil
}

// nameImages gives the one image of images the reference ref, if ref is set; else every
// image must have a name of its own.
func nameImages(images []image, ref string) ([]image, error) {
	if ref == "" {
		var errs []error
		for _, img := range images {
			errs = append(errs, unnamed(img))
		}
		return images, errors.Join(errs...)
	}
	if len(images) != 1 {
		return nil, fmt.Errorf("--name %s names one image, and there are %d", ref, len(images))
	}
	r, err := parseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("--name %s: %w", ref, err)
	}
	images[0].ref = r
	return images, nil
}

// unnamed is an error if nothing in img's source names it.
func unnamed(img image) error {
	if img.ref != nil {
		return nil
	}
	return fmt.Errorf("%s: nothing names the image (no %s annotation, no tag): give it a name with --name", img.source, annotationRefName)
}
