package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	cred, err := registryAnswers(ctx, opts)
	if err != nil {
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
		if err := pushImage(ctx, img, registryAddr(opts), cred, out); err != nil {
			return err
		}
	}
	return nil
}

// registryAnswers checks that the cluster in opts.Dir was created and that its
// registry answers, at the port its settings say, to the account kept in its state
// directory, which it returns.
func registryAnswers(ctx context.Context, opts Options) (registryCredential, error) {
	p := pathsIn(opts.Dir)
	saved, err := loadSettings(p.clusterState)
	if err != nil {
		return registryCredential{}, err
	}
	if saved == nil {
		return registryCredential{}, fmt.Errorf("there is no local cluster in %s: run tfk8s local up%s", opts.Dir, dirFlag(opts.Dir))
	}
	cred, err := readRegistryCredential(p)
	if err != nil {
		return cred, fmt.Errorf("%w: the registry takes images only from tfk8s local load run as the user who ran local up (root)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = registryOK(ctx, registryURL(opts), cred)
	if se := (*statusError)(nil); errors.As(err, &se) && se.code == http.StatusUnauthorized {
		return cred, fmt.Errorf("the registry of the local cluster in %s refuses the account in %s (%w): run tfk8s local up%s to write it again", opts.Dir, registryCredentialPath(p), err, dirFlag(opts.Dir))
	}
	if err != nil {
		return cred, fmt.Errorf("the local cluster in %s is not up, its registry does not answer (%w): run tfk8s local up%s", opts.Dir, err, dirFlag(opts.Dir))
	}
	return cred, nil
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
