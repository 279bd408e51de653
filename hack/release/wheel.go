package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// preRelease matches the pre-releases PEP 440 has a form for: rc.1, beta.2, a3.
var preRelease = regexp.MustCompile(`^(a|alpha|b|beta|rc)\.?([0-9]+)$`)

// pep440Pre is how PEP 440 writes each pre-release of preRelease.
var pep440Pre = map[string]string{"a": "a", "alpha": "a", "b": "b", "beta": "b", "rc": "rc"}

// pythonVersion is the release's version as PEP 440 writes it, for the wheels: v1.2.3
// is 1.2.3, v0.2.0-rc.1 is 0.2.0rc1, and another pre-release a local label
// (v0.1.1-e2e is 0.1.1+e2e), since pip refuses a version it cannot read.
func pythonVersion(version string) (string, error) {
	v, err := chartVersion(version)
	if err != nil {
		return "", err
	}
	core, pre, found := strings.Cut(v, "-")
	if !found {
		return core, nil
	}
	if m := preRelease.FindStringSubmatch(pre); m != nil {
		n, _ := strconv.Atoi(m[2])
		return fmt.Sprintf("%s%s%d", core, pep440Pre[m[1]], n), nil
	}
	return core + "+" + strings.ToLower(strings.ReplaceAll(pre, "-", ".")), nil
}

// buildWheels builds the Python SDK's wheel of each CLI platform with make python,
// each carrying that platform's binary stamped as the CLI's, from a copy of the SDK
// whose _version.py says the release's version; it moves the wheels beside the CLI
// archives and adds their SHA-256 to SHA256SUMS.
func buildWheels(ctx context.Context, o options) ([]artefact, error) {
	version, err := pythonVersion(o.version)
	if err != nil {
		return nil, err
	}
	build, err := filepath.Abs(o.buildDir())
	if err != nil {
		return nil, err
	}
	src, out := filepath.Join(build, "python"), filepath.Join(build, "wheels")
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	if err := os.CopyFS(src, os.DirFS(o.python)); err != nil {
		return nil, fmt.Errorf("copying %s: %w", o.python, err)
	}
	versionFile := fmt.Appendf(nil, "# Written by hack/release for %s. DO NOT EDIT.\n__version__ = %q\n", o.version, version)
	if err := os.WriteFile(filepath.Join(src, "src", "tfk8s", "_version.py"), versionFile, 0o644); err != nil {
		return nil, err
	}
	var platforms []string
	for _, p := range cliPlatforms {
		platforms = append(platforms, p.os+"/"+p.arch)
	}
	cmd := exec.CommandContext(ctx, o.make, "--no-print-directory", "python",
		"VERSION="+o.version, "REVISION="+o.revision, "IMAGE_REPO="+o.registry,
		"PY_SRC="+src, "PY_OUT="+out, "PY_BIN="+build, "PY_PLATFORMS="+strings.Join(platforms, " "))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("make python: %w", err)
	}
	built, err := filepath.Glob(filepath.Join(out, "*.whl"))
	if err != nil {
		return nil, err
	}
	if len(built) != len(cliPlatforms) {
		return nil, fmt.Errorf("make python wrote %d wheels to %s, want %d, one a platform", len(built), out, len(cliPlatforms))
	}
	var done []artefact
	var wheels []string
	for _, wheel := range built {
		dst := filepath.Join(o.dir(), filepath.Base(wheel))
		if err := os.Rename(wheel, dst); err != nil {
			return nil, err
		}
		st, err := os.Stat(dst)
		if err != nil {
			return nil, err
		}
		wheels = append(wheels, dst)
		done = append(done, artefact{name: filepath.Base(dst), size: megabytes(st.Size())})
	}
	if err := addChecksums(filepath.Join(o.dir(), checksumsFile), wheels); err != nil {
		return nil, err
	}
	return done, nil
}
