package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// krewManifestFile is the krew plugin manifest: kubectl krew install
// --manifest=tfk8s.yaml installs kubectl tfk8s from it.
const krewManifestFile = "tfk8s.yaml"

// krewPlugin is a krew plugin manifest, krew.googlecontainertools.github.com/v1alpha2.
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   krewMetadata   `json:"metadata"`
	Spec       krewPluginSpec `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

// krewPlatform is one archive: krew picks it by os and arch, checks its sha256 and
// links bin as kubectl-tfk8s.
type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Files    []krewFile   `json:"files"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// writeKrewManifest writes the krew manifest of the release's CLI archives, each with
// the SHA-256 SHA256SUMS names.
func writeKrewManifest(_ context.Context, o options) ([]artefact, error) {
	sums, err := readChecksums(filepath.Join(o.dir(), checksumsFile))
	if err != nil {
		return nil, err
	}
	m, err := krewManifest(o.version, o.releaseURL, sums)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(o.dir(), krewManifestFile)
	if err := os.WriteFile(path, m, 0o644); err != nil {
		return nil, err
	}
	return []artefact{{name: krewManifestFile, size: fmt.Sprintf("%d platforms, %d bytes", len(cliPlatforms), len(m))}}, nil
}

// krewManifest is the manifest of the plugin tfk8s at version: an archive per CLI
// platform, at releaseURL/<archive>, with its SHA-256 from sums (archive name to hex).
func krewManifest(version, releaseURL string, sums map[string]string) ([]byte, error) {
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "tfk8s"},
		Spec: krewPluginSpec{
			Version:          version,
			Homepage:         "https://github.com/tfk8s/tfk8s",
			ShortDescription: "Run TensorFlow training jobs (TFJobs) on Kubernetes",
			Description: "tfk8s submits TensorFlow training jobs, single-node or distributed, " +
				"with the user's code and data shipped through S3-compatible storage; lists, " +
				"describes and follows them, and fetches their logs and artifacts. It needs the " +
				"tfk8s controller installed in the cluster.\n",
		},
	}
	for _, pl := range cliPlatforms {
		archive := archiveName(version, pl)
		sum, ok := sums[archive]
		if !ok {
			return nil, fmt.Errorf("no checksum of %s", archive)
		}
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": pl.os, "arch": pl.arch}},
			URI:      strings.TrimSuffix(releaseURL, "/") + "/" + archive,
			SHA256:   sum,
			Files:    []krewFile{{From: "tfk8s", To: "."}},
			Bin:      "tfk8s",
		})
	}
	return yaml.Marshal(p)
}
