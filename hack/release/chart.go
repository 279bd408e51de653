package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tfk8s/tfk8s/hack/images/ociimage"
)

// semver is a version of the form X.Y.Z with an optional pre-release, as Helm wants
// a chart's version.
var semver = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// chartVersion is the chart's version of the release vX.Y.Z: X.Y.Z.
func chartVersion(version string) (string, error) {
	v := strings.TrimPrefix(version, "v")
	if !strings.HasPrefix(version, "v") || !semver.MatchString(v) {
		return "", fmt.Errorf("version %q: want vX.Y.Z, optionally with a pre-release (v1.2.3-rc.1)", version)
	}
	return v, nil
}

// packageAndPushChart packages the chart, its values defaulting to the images of this
// release, and pushes it to oci://REGISTRY/charts. The checked-in chart is not
// changed: a copy is.
func packageAndPushChart(ctx context.Context, o options) ([]artefact, error) {
	version, _ := chartVersion(o.version) // checked by options.check
	tensorflow, err := ociimage.LayoutRef(filepath.Join(o.buildDir(), "images", "tensorflow"))
	if err != nil {
		return nil, err
	}
	tensorBoardImage, err := releaseReference(o.registry, "tensorflow", tensorflow)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "tfk8s-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	chart := filepath.Join(tmp, filepath.Base(o.chart))
	if err := os.CopyFS(chart, os.DirFS(o.chart)); err != nil {
		return nil, fmt.Errorf("copying %s: %w", o.chart, err)
	}
	valuesFile := filepath.Join(chart, "values.yaml")
	values, err := os.ReadFile(valuesFile)
	if err != nil {
		return nil, err
	}
	if values, err = releaseValues(values, o.registry, tensorBoardImage); err != nil {
		return nil, err
	}
	if err := os.WriteFile(valuesFile, values, 0o644); err != nil {
		return nil, err
	}
	if err := runHelm(ctx, o, "package", chart, "--version", version, "--app-version", o.version, "--destination", o.dir()); err != nil {
		return nil, err
	}
	pkg := filepath.Join(o.dir(), fmt.Sprintf("tfk8s-%s.tgz", version))
	push := []string{"push", pkg, "oci://" + o.registry + "/charts"}
	if o.plainHTTP {
		push = append(push, "--plain-http")
	}
	if err := runHelm(ctx, o, push...); err != nil {
		return nil, err
	}
	st, err := os.Stat(pkg)
	if err != nil {
		return nil, err
	}
	fmt.Printf("pushed oci://%s/charts/tfk8s:%s\n", o.registry, version)
	return []artefact{{name: fmt.Sprintf("oci://%s/charts/tfk8s:%s", o.registry, version), size: fmt.Sprintf("%.1f kB", float64(st.Size())/1e3)}}, nil
}

// releaseValues rewrites the chart's values.yaml so that its images are the
// release's: each ghcr.io/tfk8s repository under registry (their tags default to the
// chart's appVersion, the release's version), and TensorBoard's image the release's
// tensorflow image. Text, not YAML, so that the comments stay; each replacement must
// match as often as the chart has images, or the chart changed and this must too.
func releaseValues(values []byte, registry, tensorBoardImage string) ([]byte, error) {
	s := string(values)
	replacements := []struct {
		old, new string
		count    int
	}{
		{"repository: ghcr.io/tfk8s/", "repository: " + registry + "/", 3},
		{"\ntensorBoardImage: \"\"\n", "\ntensorBoardImage: " + fmt.Sprintf("%q", tensorBoardImage) + "\n", 1},
	}
	for _, r := range replacements {
		if n := strings.Count(s, r.old); n != r.count {
			return nil, fmt.Errorf("the chart's values.yaml has %q %d times, want %d: update hack/release/chart.go", strings.TrimSpace(r.old), n, r.count)
		}
		s = strings.ReplaceAll(s, r.old, r.new)
	}
	return []byte(s), nil
}

// runHelm runs bin/helm, its output to stdout; a failure carries helm's own words.
func runHelm(ctx context.Context, o options, args ...string) error {
	out, err := exec.CommandContext(ctx, o.helm, args...).CombinedOutput()
	os.Stdout.Write(out)
	if err != nil {
		return fmt.Errorf("helm %s: %w", args[0], err)
	}
	return nil
}
