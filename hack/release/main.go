// Command release builds a tfk8s release, stamped with its version, and publishes it:
// make release runs it.
//
//	release --version vX.Y.Z --registry HOST[:PORT][/PATH] --ldflags FLAGS
//		[--out _out/release] [--release-url URL] [--plain-http] [--make make] [--python python]
//		[--changelog CHANGELOG.md]
//
// A version that is not a pre-release must have its section in the changelog, not
// marked unreleased, or nothing is built.
//
// In order, each step timed:
//   - images: make images tensorflow-image into OUT/VERSION/build, stamped with the
//     version and REGISTRY as the images' repository; then each image pushed to
//     REGISTRY/NAME: the controller, agent and dashboard (linux/amd64 and linux/arm64)
//     tagged VERSION, python, tensorflow and jupyter (linux/amd64: a Debian root file
//     system and pip wheels of this machine's architecture) under their own tags;
//   - cli: tfk8s for linux and darwin, amd64 and arm64, static, as
//     OUT/VERSION/tfk8s_VERSION_OS_ARCH.tar.gz, with SHA256SUMS beside them;
//   - wheel: the Python SDK's wheels (make python) for the same platforms, each
//     carrying its platform's tfk8s, as OUT/VERSION/tfk8s-PYVERSION-py3-none-TAG.whl,
//     PYVERSION the version as PEP 440 writes it, their SHA-256 added to SHA256SUMS;
//   - krew: OUT/VERSION/tfk8s.yaml, the krew plugin manifest of kubectl tfk8s naming
//     those archives under RELEASE_URL with their SHA-256;
//   - chart: charts/tfk8s packaged as OUT/VERSION/tfk8s-X.Y.Z.tgz, its values naming
//     the images of this release, pushed to oci://REGISTRY/charts.
//
// It ends with a summary: each artefact, its size (an image's compressed, per
// platform) and the total time.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	version, revision, registry string
	ldflags, releaseURL         string
	out, chart, python          string
	changelog                   string
	helm, make                  string
	plainHTTP                   bool
	// gpuImage adds the CUDA image, tensorflow-gpu, to the images released.
	gpuImage bool
}

// dir is where the release's files go: OUT/VERSION.
func (o options) dir() string { return filepath.Join(o.out, o.version) }

// buildDir is where make writes the release's binaries and image layouts.
func (o options) buildDir() string { return filepath.Join(o.dir(), "build") }

// artefact is one thing the release published, for the summary.
type artefact struct {
	name string
	// size reads, e.g., "12.3 MB" or "linux/amd64 9.8 MB, linux/arm64 9.1 MB".
	size string
}

// step is one part of the release.
type step struct {
	name string
	run  func(context.Context, options) ([]artefact, error)
}

func main() {
	o := parseFlags(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := release(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) options {
	fs := flag.NewFlagSet("release", flag.ExitOnError)
	var o options
	fs.StringVar(&o.version, "version", "", "the release's version, vX.Y.Z: images' tag, chart's appVersion, binaries' stamp")
	fs.StringVar(&o.revision, "revision", "", "the git commit released")
	fs.StringVar(&o.registry, "registry", "", "registry and optional path the images and chart are pushed to, e.g. ghcr.io/tfk8s")
	fs.StringVar(&o.ldflags, "ldflags", "", "the CLI's -ldflags: the Makefile's IMAGE_LDFLAGS, version, revision and repository")
	fs.StringVar(&o.releaseURL, "release-url", "", "where the CLI archives are downloaded from: the krew manifest's URI base")
	fs.StringVar(&o.out, "out", "_out/release", "directory the release is written under, in VERSION/")
	fs.StringVar(&o.chart, "chart", "charts/tfk8s", "the Helm chart's directory")
	fs.StringVar(&o.python, "python", "python", "the Python SDK's directory")
	fs.StringVar(&o.changelog, "changelog", "CHANGELOG.md", "the changelog, which must have a section for a version that is not a pre-release")
	fs.StringVar(&o.helm, "helm", "bin/helm", "the helm binary")
	fs.StringVar(&o.make, "make", "make", "the make binary that builds the images")
	fs.BoolVar(&o.plainHTTP, "plain-http", false, "push the chart over plain HTTP (a test's registry); images go over HTTP to a registry on loopback anyway")
	fs.BoolVar(&o.gpuImage, "gpu-image", false, "also build (make tensorflow-gpu-image) and push the CUDA image, ghcr.io/tfk8s/tensorflow:2.21.0-gpu as REGISTRY/tensorflow:2.21.0-gpu")
	_ = fs.Parse(args)
	return o
}

// check says what is wrong with the flags.
func (o options) check() error {
	if o.version == "" || o.registry == "" || o.ldflags == "" {
		return fmt.Errorf("flags --version, --registry and --ldflags are required")
	}
	if _, err := chartVersion(o.version); err != nil {
		return err
	}
	if o.releaseURL == "" {
		return fmt.Errorf("flag --release-url is required: the krew manifest names the archives under it")
	}
	return checkChangelog(o.changelog, o.version)
}

// release runs every step in order and prints the summary.
func release(ctx context.Context, o options) error {
	if err := o.check(); err != nil {
		return err
	}
	o.registry = strings.TrimSuffix(o.registry, "/")
	if err := os.MkdirAll(o.dir(), 0o755); err != nil {
		return err
	}
	start := time.Now()
	steps := []step{
		{"images", buildAndPushImages},
		{"cli", buildCLI},
		{"wheel", buildWheels},
		{"krew", writeKrewManifest},
		{"chart", packageAndPushChart},
	}
	var summary []artefact
	for _, s := range steps {
		stepStart := time.Now()
		fmt.Printf("release: %s ...\n", s.name)
		done, err := s.run(ctx, o)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Printf("release: %s done in %.1fs\n", s.name, time.Since(stepStart).Seconds())
		summary = append(summary, done...)
	}
	printSummary(o, summary, time.Since(start))
	return nil
}

// printSummary prints each artefact with its size, then the total time.
func printSummary(o options, artefacts []artefact, took time.Duration) {
	fmt.Printf("\nrelease %s, to %s and %s:\n", o.version, o.registry, o.dir())
	width := 0
	for _, a := range artefacts {
		width = max(width, len(a.name))
	}
	for _, a := range artefacts {
		fmt.Printf("  %-*s  %s\n", width, a.name, a.size)
	}
	fmt.Printf("release %s done in %.1fs\n", o.version, took.Seconds())
}

// megabytes reads a size in bytes as "12.3 MB".
func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
