package localcluster

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// readImages returns the images at path: an OCI layout directory, an OCI archive (a
// tar of a layout) or a docker save tarball, either tar gzipped or not. An OCI
// archive is unpacked into a directory under tmp, which the caller removes.
func readImages(p, tmp string) ([]image, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		if !isLayout(p) {
			return nil, errors.New("a directory, but not an OCI layout (no index.json)")
		}
		return readLayout(p, filepath.Base(p))
	}
	open := func() (io.ReadCloser, error) { return openTar(p) }
	names, err := tarNames(open)
	if err != nil {
		return nil, fmt.Errorf("neither an OCI layout directory nor a tar file: %w", err)
	}
	switch {
	case names["index.json"] && names["oci-layout"]:
		dir, err := os.MkdirTemp(tmp, "load-")
		if err != nil {
			return nil, err
		}
		if err := untarLayout(open, dir); err != nil {
			return nil, err
		}
		images, err := readLayout(dir, archiveName(p))
		for i := range images {
			images[i].source = p
		}
		return images, err
	case names["manifest.json"]:
		return readDockerArchive(p, open)
	default:
		return nil, errors.New("a tar file, but neither an OCI archive (index.json, oci-layout) nor a docker save tarball (manifest.json)")
	}
}

// archiveName is an archive's file name without its extensions: what a bare tag in
// it is a tag of, as a layout directory's name is.
func archiveName(p string) string {
	base := filepath.Base(p)
	for _, ext := range []string{".gz", ".tgz", ".tar", ".oci"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// readDockerArchive returns the images of a docker save tarball, one per tag in its
// manifest.json; an untagged image, the only one of its tarball, has no name.
func readDockerArchive(p string, open tarball.Opener) ([]image, error) {
	m, err := tarball.LoadManifest(open)
	if err != nil {
		return nil, fmt.Errorf("reading the docker save tarball's manifest.json: %w", err)
	}
	var images []image
	for i, d := range m {
		if len(d.RepoTags) == 0 && len(m) > 1 {
			return nil, fmt.Errorf("image %d of the docker save tarball (config %s) has no tag, and the tarball holds %d images", i+1, d.Config, len(m))
		}
		if len(d.RepoTags) == 0 {
			img, err := tarball.Image(open, nil)
			if err != nil {
				return nil, fmt.Errorf("reading the docker save tarball: %w", err)
			}
			images = append(images, image{source: p, content: img})
		}
		for _, t := range d.RepoTags {
			tag, err := name.NewTag(t, name.WithDefaultRegistry("docker.io"))
			if err != nil {
				return nil, fmt.Errorf("parsing the docker save tarball's tag %q: %w", t, err)
			}
			img, err := tarball.Image(open, &tag)
			if err != nil {
				return nil, fmt.Errorf("reading %s from the docker save tarball: %w", t, err)
			}
			images = append(images, image{source: p, ref: tag, content: img})
		}
	}
	return images, nil
}

// openTar opens a tar file, gunzipping it when it is gzipped.
func openTar(p string) (io.ReadCloser, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{zr, f}, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{br, f}, nil
}

// tarNames lists the files of a tar, by their cleaned names.
func tarNames(open tarball.Opener) (map[string]bool, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names[path.Clean(hdr.Name)] = true
	}
}

// untarLayout unpacks the OCI layout in a tar into dir: its regular files and
// directories, none outside dir.
func untarLayout(open tarball.Opener, dir string) error {
	f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpacking the OCI archive: %w", err)
		}
		rel := path.Clean(hdr.Name)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("unpacking the OCI archive: %q is outside the archive", hdr.Name)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o700)
		case tar.TypeReg:
			err = writeFromTar(dst, tr)
		}
		if err != nil {
			return fmt.Errorf("unpacking the OCI archive: %w", err)
		}
	}
}

// writeFromTar writes the current file of tr to dst.
func writeFromTar(dst string, tr io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, tr)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
