package install

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tfk8s/tfk8s/hack/images/ociimage"
)

// imageSummary is what a node sees of one platform's image.
type imageSummary struct {
	User       string
	Entrypoint []string
	Labels     map[string]string
	// Files are the path, mode and size of each regular file the image holds: its
	// binaries, nothing else.
	Files []string
}

// TestImagePushedAndPulledBack builds a two-platform image of a small static program
// with the images tool, writes it as an OCI layout, pushes it to a real registry on
// loopback and pulls it back: both platforms, each with its own binary, non-root.
func TestImagePushedAndPulledBack(t *testing.T) {
	dir := t.TempDir()
	spec := ociimage.Spec{Name: "tfk8s-hello", Binaries: map[string]string{}, Version: "v9.9.9", Revision: "abc123", Source: "https://github.com/tfk8s/tfk8s"}
	for _, arch := range []string{"amd64", "arm64"} {
		spec.Binaries[arch] = buildHello(t, dir, arch)
	}
	idx, err := ociimage.Build(spec, []string{"amd64", "arm64"})
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	if err := ociimage.WriteLayout(layoutDir, idx, spec.Version); err != nil {
		t.Fatal(err)
	}
	fromDisk, err := ociimage.ReadLayout(layoutDir)
	if err != nil {
		t.Fatal(err)
	}

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/tfk8s/tfk8s-hello:v9.9.9"
	if err := ociimage.Push(context.Background(), fromDisk, ref); err != nil {
		t.Fatal(err)
	}
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(parsed)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	want := map[string]imageSummary{}
	for arch, path := range spec.Binaries {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		want["linux/"+arch] = imageSummary{
			User:       "65532:65532",
			Entrypoint: []string{"/usr/local/bin/tfk8s-hello"},
			Labels:     spec.Labels(),
			Files:      []string{fileDescription("/usr/local/bin/tfk8s-hello", 0o755, info.Size())},
		}
	}
	got := summarize(t, pulled)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pulled image (-want +got):\n%s", diff)
	}
	sizes, err := ociimage.CompressedSizes(pulled)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed and pulled %s: %s", ref, sizes)
}

// TestMadeImages checks what make images wrote under _out/images, their binaries (the
// agent's image carries tfk8s-nvml beside the agent, for the agent to copy into GPU
// pods), and their sizes against the goals: controller at most 25 MB, agent at most
// 10 MB, compressed.
func TestMadeImages(t *testing.T) {
	goals := map[string]int64{"tfk8s-controller": 25e6, "tfk8s-agent": 10e6}
	binaries := map[string][]string{
		"tfk8s-controller": {"/usr/local/bin/tfk8s-controller"},
		"tfk8s-agent":      {"/usr/local/bin/tfk8s-agent", "/usr/local/bin/tfk8s-nvml"},
	}
	for image, goal := range goals {
		t.Run(image, func(t *testing.T) {
			dir := filepath.Join(repoRoot, "_out", "images", image)
			if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s not built: run make images (make test runs it)", dir)
			}
			idx, err := ociimage.ReadLayout(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(t, idx)
			for platform, s := range got {
				if s.User != ociimage.User || s.Entrypoint[0] != "/usr/local/bin/"+image || s.Labels["org.opencontainers.image.version"] == "" {
					t.Errorf("%s %s: %+v", image, platform, s)
				}
			}
			if len(got) != 2 || got["linux/amd64"].Files == nil || got["linux/arm64"].Files == nil {
				t.Errorf("%s: platforms %v, want linux/amd64 and linux/arm64", image, got)
			}
			for platform, s := range got {
				var paths []string
				for _, f := range s.Files {
					paths = append(paths, strings.Fields(f)[0])
				}
				if diff := cmp.Diff(binaries[image], paths); diff != "" {
					t.Errorf("%s %s: files (-want +got):\n%s", image, platform, diff)
				}
			}
			sizes, err := ociimage.CompressedSizes(idx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %s", image, got["linux/amd64"].Labels["org.opencontainers.image.version"], sizes)
			for platform, size := range sizes {
				if size > goal {
					t.Errorf("%s %s: %d bytes compressed, goal %d", image, platform, size, goal)
				}
			}
		})
	}
}

// TestControllerDefaultsToItsOwnAgentImage builds the controller as make images does,
// with another version and repository, and reads its default --agent-image.
func TestControllerDefaultsToItsOwnAgentImage(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tfk8s-controller")
	const pkg = "github.com/tfk8s/tfk8s/internal/version"
	ldflags := "-X " + pkg + ".Version=v9.9.9-test -X " + pkg + ".Repository=registry.test/ml"
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, "./cmd/tfk8s-controller")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "--help").CombinedOutput()
	if want := `(default "registry.test/ml/tfk8s-agent:v9.9.9-test")`; !bytes.Contains(out, []byte(want)) {
		t.Errorf("--help does not say %s:\n%s", want, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "tfk8s-controller v9.9.9-test") {
		t.Errorf("--version: %q, %v", out, err)
	}
}

// buildHello compiles a static program for linux/arch into dir.
func buildHello(t *testing.T, dir, arch string) string {
	t.Helper()
	src := filepath.Join(dir, "hello.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello from tfk8s\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello-"+arch)
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hello for %s: %v\n%s", arch, err, b)
	}
	return out
}

// summarize describes each platform's image of idx.
func summarize(t *testing.T, idx v1.ImageIndex) map[string]imageSummary {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]imageSummary{}
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s", d.Platform, cfg.Architecture)
		}
		out[d.Platform.String()] = imageSummary{
			User:       cfg.Config.User,
			Entrypoint: cfg.Config.Entrypoint,
			Labels:     cfg.Config.Labels,
			Files:      regularFiles(t, img),
		}
	}
	return out
}

// regularFiles describes the regular files of img's filesystem, in the layers' order.
func regularFiles(t *testing.T, img v1.Image) []string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			files = append(files, fileDescription("/"+hdr.Name, os.FileMode(hdr.Mode), hdr.Size))
		}
	}
	return files
}

// fileDescription reads "/usr/local/bin/tfk8s-agent -rwxr-xr-x 4242 bytes".
func fileDescription(path string, mode os.FileMode, size int64) string {
	return fmt.Sprintf("%s %s %d bytes", path, mode, size)
}
