package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/tfk8s/tfk8s/internal/pack"
)

// TestKrewManifestNamesTheArchives archives a binary per platform as the release
// does and checks what krew and a user downloading by hand would: each platform's
// URI names its archive under the release URL, its sha256 is the archive's, SHA256SUMS
// says the same, and the archive holds the binary as an executable tfk8s.
func TestKrewManifestNamesTheArchives(t *testing.T) {
	dir := t.TempDir()
	const version = "v1.2.3"
	var archives []string
	binaries := map[string][]byte{}
	for _, p := range cliPlatforms {
		bin := filepath.Join(dir, p.os+"_"+p.arch)
		binaries[archiveName(version, p)] = []byte("binary for " + p.os + "/" + p.arch)
		if err := os.WriteFile(bin, binaries[archiveName(version, p)], 0o755); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dir, archiveName(version, p))
		if _, err := writeArchive(archive, bin); err != nil {
			t.Fatal(err)
		}
		archives = append(archives, archive)
	}
	sumsFile := filepath.Join(dir, checksumsFile)
	if err := writeChecksums(sumsFile, archives); err != nil {
		t.Fatal(err)
	}
	sums, err := readChecksums(sumsFile)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := krewManifest(version, "https://example.com/releases/v1.2.3/", sums)
	if err != nil {
		t.Fatal(err)
	}
	var plugin krewPlugin
	if err := yaml.UnmarshalStrict(manifest, &plugin); err != nil {
		t.Fatalf("reading the manifest: %v\n%s", err, manifest)
	}
	if plugin.Metadata.Name != "tfk8s" || plugin.Spec.Version != version || plugin.Kind != "Plugin" {
		t.Errorf("manifest names plugin %q %s (%s), want tfk8s %s (Plugin)", plugin.Metadata.Name, plugin.Spec.Version, plugin.Kind, version)
	}
	var got, want []string
	for _, p := range cliPlatforms {
		want = append(want, p.os+"/"+p.arch+" https://example.com/releases/v1.2.3/"+archiveName(version, p))
	}
	for _, p := range plugin.Spec.Platforms {
		got = append(got, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"]+" "+p.URI)
		archive := filepath.Join(dir, filepath.Base(p.URI))
		actual, err := pack.FileSHA256(archive)
		if err != nil {
			t.Fatal(err)
		}
		if p.SHA256 != actual || sums[filepath.Base(p.URI)] != actual {
			t.Errorf("%s: manifest sha256 %s, SHA256SUMS %s, archive's %s", p.URI, p.SHA256, sums[filepath.Base(p.URI)], actual)
		}
		if p.Bin != "tfk8s" {
			t.Errorf("%s: bin %q, want tfk8s", p.URI, p.Bin)
		}
		name, mode, content := readArchive(t, archive)
		if name != "tfk8s" || mode&0o111 == 0 || !bytes.Equal(content, binaries[filepath.Base(archive)]) {
			t.Errorf("%s holds %s (mode %o, %q), want the executable tfk8s", archive, name, mode, content)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}

// TestArchiveIsReproducible wants the same binary to make the same archive, so that a
// rebuilt release has the checksums of the first.
func TestArchiveIsReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tfk8s")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, name := range []string{"a.tar.gz", "b.tar.gz"} {
		if _, err := writeArchive(filepath.Join(dir, name), bin); err != nil {
			t.Fatal(err)
		}
		sum, err := pack.FileSHA256(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	if sums[0] != sums[1] {
		t.Errorf("two archives of one binary differ: %s, %s", sums[0], sums[1])
	}
}

// readArchive returns the one file a gzipped tar holds: its name, mode and content.
func readArchive(t *testing.T, path string) (string, int64, []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	content, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("%s holds more than %s", path, hdr.Name)
	}
	return hdr.Name, hdr.Mode, content
}

// TestReleaseValuesNameTheReleaseImages rewrites the checked-in chart's values and
// reads them back as Helm would: every image is the release registry's.
func TestReleaseValuesNameTheReleaseImages(t *testing.T) {
	values, err := os.ReadFile("../../charts/tfk8s/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := releaseValues(values, "127.0.0.1:5000/rel", "127.0.0.1:5000/rel/tensorflow:2.21.0-cpu")
	if err != nil {
		t.Fatal(err)
	}
	type image struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
	}
	var got struct {
		Image            image  `json:"image"`
		AgentImage       image  `json:"agentImage"`
		TensorBoardImage string `json:"tensorBoardImage"`
		Dashboard        struct {
			Image image `json:"image"`
		} `json:"dashboard"`
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := got
	want.Image = image{Repository: "127.0.0.1:5000/rel/tfk8s-controller"}
	want.AgentImage = image{Repository: "127.0.0.1:5000/rel/tfk8s-agent"}
	want.Dashboard.Image = image{Repository: "127.0.0.1:5000/rel/tfk8s-dashboard"}
	want.TensorBoardImage = "127.0.0.1:5000/rel/tensorflow:2.21.0-cpu"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("release values (-want +got):\n%s", diff)
	}
	if _, err := releaseValues([]byte("image:\n  repository: example.com/x\n"), "r", "t"); err == nil {
		t.Errorf("values without the ghcr.io/tfk8s images were rewritten without an error")
	}
}

func TestReleaseReference(t *testing.T) {
	cases := []struct{ layout, ref, want string }{
		{"tfk8s-agent", "v1.2.3", "reg:5000/p/tfk8s-agent:v1.2.3"},
		{"python", "ghcr.io/tfk8s/python:3.11", "reg:5000/p/python:3.11"},
		{"jupyter", "ghcr.io/tfk8s/jupyter:2.21.0-cpu", "reg:5000/p/jupyter:2.21.0-cpu"},
		{"tensorflow-gpu", "ghcr.io/tfk8s/tensorflow:2.21.0-gpu", "reg:5000/p/tensorflow:2.21.0-gpu"},
	}
	for _, tc := range cases {
		got, err := releaseReference("reg:5000/p", tc.layout, tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("releaseReference(%s, %s) = %q, %v; want %q", tc.layout, tc.ref, got, err, tc.want)
		}
	}
}

func TestChartVersion(t *testing.T) {
	cases := []struct {
		version, want string
		ok            bool
	}{
		{"v1.2.3", "1.2.3", true},
		{"v0.2.0-rc.1", "0.2.0-rc.1", true},
		{"1.2.3", "", false},
		{"v1.2", "", false},
	}
	for _, tc := range cases {
		got, err := chartVersion(tc.version)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("chartVersion(%q) = %q, %v; want %q, ok %v", tc.version, got, err, tc.want, tc.ok)
		}
	}
}

func TestPythonVersion(t *testing.T) {
	cases := []struct {
		version, want string
		ok            bool
	}{
		{"v1.2.3", "1.2.3", true},
		{"v0.2.0-rc.1", "0.2.0rc1", true},
		{"v0.2.0-beta.02", "0.2.0b2", true},
		{"v0.2.0-alpha3", "0.2.0a3", true},
		{"v0.1.1-e2e", "0.1.1+e2e", true},
		{"v0.1.1-Dev-Build.7", "0.1.1+dev.build.7", true},
		{"1.2.3", "", false},
	}
	for _, tc := range cases {
		got, err := pythonVersion(tc.version)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("pythonVersion(%q) = %q, %v; want %q, ok %v", tc.version, got, err, tc.want, tc.ok)
		}
	}
}

// TestChecksumsOfArchivesAndWheels writes SHA256SUMS as the cli step does, adds a
// wheel as the wheel step does, and reads back each file's SHA-256.
func TestChecksumsOfArchivesAndWheels(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"tfk8s_v1.2.3_linux_amd64.tar.gz": "archive", "tfk8s-1.2.3-py3-none-manylinux_2_17_x86_64.whl": "wheel"}
	want := map[string]string{}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := pack.FileSHA256(path)
		if err != nil {
			t.Fatal(err)
		}
		want[name] = sum
	}
	sums := filepath.Join(dir, checksumsFile)
	if err := writeChecksums(sums, []string{filepath.Join(dir, "tfk8s_v1.2.3_linux_amd64.tar.gz")}); err != nil {
		t.Fatal(err)
	}
	if err := addChecksums(sums, []string{filepath.Join(dir, "tfk8s-1.2.3-py3-none-manylinux_2_17_x86_64.whl")}); err != nil {
		t.Fatal(err)
	}
	got, err := readChecksums(sums)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SHA256SUMS (-want +got):\n%s", diff)
	}
}
