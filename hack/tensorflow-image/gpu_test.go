package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGPUPartsCached: the GPU layers count as cached only when every layer their index
// lists is there with the digest it lists, and the layout of them links, not copies,
// the cached files.
func TestGPUPartsCached(t *testing.T) {
	dir := t.TempDir()
	makeTree(t, filepath.Join(dir, "tree"), time.Now())
	l, err := writeLayer(filepath.Join(dir, "tree"), filepath.Join(dir, "nvidia_cudnn-k1.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, "k1.json")
	data, _ := json.Marshal([]gpuPart{{Name: "nvidia_cudnn", Layer: l}})
	if err := os.WriteFile(index, data, 0o644); err != nil {
		t.Fatal(err)
	}
	parts, ok := readParts(index)
	if !ok || len(parts) != 1 || parts[0].Layer.Path != l.Path {
		t.Fatalf("readParts of a complete index: %+v, %v; want the layer at %s", parts, ok, l.Path)
	}

	wrong := *l
	wrong.Sum.Hex = "00" + l.Sum.Hex[2:]
	data, _ = json.Marshal([]gpuPart{{Name: "nvidia_cudnn", Layer: &wrong}})
	if err := os.WriteFile(filepath.Join(dir, "k2.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, index := range map[string]string{"another key's layer": filepath.Join(dir, "k2.json"), "no index": filepath.Join(dir, "k3.json")} {
		if _, ok := readParts(index); ok {
			t.Errorf("%s: readParts says cached", name)
		}
	}

	spec := tensorFlowGPUSpec([]*layerFile{l})
	idx, err := buildImage(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "layout")
	if err := writeLayout(out, idx, spec, "k1"); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(l.Path)
	b, err := os.Stat(filepath.Join(out, "blobs", "sha256", l.Sum.Hex))
	if err != nil || !os.SameFile(a, b) {
		t.Errorf("the layout's blob is not the cached layer's file (%v)", err)
	}
	if diff := cmp.Diff("k1", layoutKey(out)); diff != "" {
		t.Errorf("layout key (-want +got):\n%s", diff)
	}
}
