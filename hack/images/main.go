// Command images builds the tfk8s images as OCI layouts and pushes them, with no Docker
// daemon and no base image: see package ociimage. make images and make push run it.
//
//	images build --bin DIR --out DIR --arch "amd64 arm64" --version V --revision R --source URL
//		[--user UID:GID] [--repository REPO] NAME...
//	images push --out DIR --registry HOST[:PORT][/PATH] --version V NAME...
//
// build reads DIR/linux_<arch>/<NAME> and writes OUT/<NAME>/, named V, or REPO/<NAME>:V
// with --repository (make pause-image's registry.k8s.io/pause); push sends OUT/<NAME>/
// to REGISTRY/<NAME>:<V>.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/partial"

	"github.com/tfk8s/tfk8s/hack/images/ociimage"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: images build|push [flags] NAME...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// build writes the OCI layout of each named image and prints its size.
func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	bin := fs.String("bin", "_out/bin", "directory of linux_<arch>/<name> binaries")
	out := fs.String("out", "_out/images", "directory the OCI layouts are written under")
	archs := fs.String("arch", "amd64 arm64", "architectures, space-separated")
	var spec ociimage.Spec
	fs.StringVar(&spec.Version, "version", "", "version: the org.opencontainers.image.version label")
	fs.StringVar(&spec.Revision, "revision", "", "git commit: the org.opencontainers.image.revision label")
	fs.StringVar(&spec.Source, "source", "", "source repository URL: the org.opencontainers.image.source label")
	fs.StringVar(&spec.User, "user", ociimage.User, "uid:gid the images run as")
	var extra multiFlag
	fs.Var(&extra, "extra", "IMAGE:BINARY puts BINARY, from the same directory, beside IMAGE's own; repeatable")
	repository := fs.String("repository", "", "names each layout REPOSITORY/NAME:VERSION; empty: VERSION, which tfk8s local up reads as ghcr.io/tfk8s/NAME:VERSION")
	_ = fs.Parse(args)
	if spec.Version == "" {
		return fmt.Errorf("flag --version is required")
	}
	for _, e := range extra {
		if img, bin, ok := strings.Cut(e, ":"); !ok || img == "" || bin == "" {
			return fmt.Errorf("--extra %q: want IMAGE:BINARY", e)
		}
	}
	for _, name := range fs.Args() {
		s := spec
		s.Name = name
		for _, e := range extra {
			if img, bin, ok := strings.Cut(e, ":"); ok && img == name {
				s.Extra = append(s.Extra, bin)
			}
		}
		s.Binaries = map[string]string{}
		for _, arch := range strings.Fields(*archs) {
			s.Binaries[arch] = filepath.Join(*bin, "linux_"+arch, name)
		}
		idx, err := ociimage.Build(s, strings.Fields(*archs))
		if err != nil {
			return err
		}
		ref := s.Version
		if *repository != "" {
			ref = *repository + "/" + name + ":" + s.Version
		}
		dir := filepath.Join(*out, name)
		if err := ociimage.WriteLayout(dir, idx, ref); err != nil {
			return err
		}
		sizes, err := ociimage.CompressedSizes(idx)
		if err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s in %s, compressed %s\n", ref, digest, dir, sizes)
	}
	return nil
}

// push sends each named OCI layout to the registry, tagged with the version.
func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	out := fs.String("out", "_out/images", "directory holding the OCI layouts")
	registry := fs.String("registry", "", "registry and optional path, e.g. localhost:5000/tfk8s")
	version := fs.String("version", "", "tag")
	_ = fs.Parse(args)
	if *registry == "" || *version == "" {
		return fmt.Errorf("flags --registry and --version are required")
	}
	for _, name := range fs.Args() {
		idx, err := ociimage.ReadLayout(filepath.Join(*out, name))
		if err != nil {
			return err
		}
		ref := strings.TrimSuffix(*registry, "/") + "/" + name + ":" + *version
		if err := ociimage.Push(context.Background(), idx, ref); err != nil {
			return err
		}
		digest, _ := partial.Digest(idx)
		fmt.Printf("pushed %s@%s\n", ref, digest)
	}
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
