package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The Python SDK (python/src/tfk8s) goes into the CLI's layer of the Jupyter image, so
// that a notebook can import tfk8s. It carries no binary there: the package runs the
// image's /usr/local/bin/tfk8s, which it finds on PATH.

// sdkFiles are the package's files: its modules and py.typed, sorted, without caches.
func sdkFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the Python SDK: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".py") || e.Name() == "py.typed") {
			names = append(names, e.Name())
		}
	}
	if !slices.Contains(names, "__init__.py") {
		return nil, fmt.Errorf("%s has no __init__.py: not the Python SDK's package", dir)
	}
	slices.Sort(names)
	return names, nil
}

// sdkSum hashes the package's files, names and contents: a change of the SDK makes
// the CLI's layer again.
func sdkSum(dir string) (string, error) {
	names, err := sdkFiles(dir)
	if err != nil {
		return "", err
	}
	parts := []string{"sdk"}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		parts = append(parts, name, string(data))
	}
	return hashOf(parts...), nil
}

// sdkVersion matches the version that hack/pysdk writes into _version.py.
var sdkVersion = regexp.MustCompile(`(?m)^__version__ = "([^"]+)"$`)

// stageSDK copies the package into stage's site-packages, with a dist-info that
// names it and its version, so that pip and importlib.metadata know it.
func stageSDK(dir, stage string) error {
	names, err := sdkFiles(dir)
	if err != nil {
		return err
	}
	v, err := os.ReadFile(filepath.Join(dir, "_version.py"))
	if err != nil {
		return fmt.Errorf("reading the Python SDK's version: %w", err)
	}
	m := sdkVersion.FindSubmatch(v)
	if m == nil {
		return fmt.Errorf("%s/_version.py names no __version__", dir)
	}
	site := filepath.Join(stage, sitePackages)
	if err := os.MkdirAll(filepath.Join(site, "tfk8s"), 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(site, "tfk8s", name)); err != nil {
			return fmt.Errorf("staging the Python SDK: %w", err)
		}
	}
	info := filepath.Join(site, "tfk8s-"+string(m[1])+".dist-info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return err
	}
	for name, content := range map[string]string{
		"METADATA":      fmt.Sprintf("Metadata-Version: 2.1\nName: tfk8s\nVersion: %s\n", m[1]),
		"INSTALLER":     "tfk8s-image\n",
		"top_level.txt": "tfk8s\n",
	} {
		if err := os.WriteFile(filepath.Join(info, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("staging the Python SDK: %w", err)
		}
	}
	return nil
}
