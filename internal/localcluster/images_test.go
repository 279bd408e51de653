package localcluster

import (
	"archive/tar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

func TestLayoutReference(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string // "" = no name
	}{
		{"full reference", map[string]string{annotationRefName: "ghcr.io/tfk8s/tensorflow:2.21.0-cpu"}, "ghcr.io/tfk8s/tensorflow:2.21.0-cpu"},
		{"bare tag: an image of this repository named after its directory", map[string]string{annotationRefName: "v0.1.0"}, "ghcr.io/tfk8s/tfk8s-agent:v0.1.0"},
		{"a name with a tag but no registry is docker.io's", map[string]string{annotationRefName: "busybox:1.36"}, "docker.io/library/busybox:1.36"},
		{"containerd's name wins over the tag docker save writes", map[string]string{
			annotationRefName: "1.36", annotationContainerdName: "docker.io/library/busybox:1.36",
		}, "docker.io/library/busybox:1.36"},
		{"digest reference", map[string]string{annotationRefName: "example.com/ml/model@sha256:" + strings.Repeat("ab", 32)}, "example.com/ml/model@sha256:" + strings.Repeat("ab", 32)},
		{"no annotation", map[string]string{"org.opencontainers.image.created": "2026-01-01"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref, err := layoutReference(tc.annotations, "tfk8s-agent")
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if ref != nil {
				got = displayName(ref)
			}
			if got != tc.want {
				t.Errorf("reference = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLocalReference(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0f", 32)
	tests := []struct{ ref, want string }{
		{"ghcr.io/tfk8s/tensorflow:2.21.0-cpu", "127.0.0.1:5000/tfk8s/tensorflow:2.21.0-cpu"},
		{"busybox", "127.0.0.1:5000/library/busybox:latest"},
		{"docker.io/library/python:3.11-slim", "127.0.0.1:5000/library/python:3.11-slim"},
		{"registry.example.com:8443/team/model:1", "127.0.0.1:5000/team/model:1"},
		{"example.com/ml/model@" + digest, "127.0.0.1:5000/ml/model@" + digest},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			ref, err := parseReference(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			got, err := localReference(ref, "127.0.0.1:5000")
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("local reference = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadImagesRefusesWhatIsNoImage: each error names what the argument is not.
func TestReadImagesRefusesWhatIsNoImage(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not an image\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	otherTar := filepath.Join(dir, "files.tar")
	writeTar(t, otherTar, map[string]string{"README": "hello"})
	escaping := filepath.Join(dir, "escaping.tar")
	writeTar(t, escaping, map[string]string{"index.json": "{}", "oci-layout": "{}", "../outside": "x"})
	tests := []struct{ path, wantErr string }{
		{text, "neither an OCI layout directory nor a tar file"},
		{t.TempDir(), "a directory, but not an OCI layout (no index.json)"},
		{otherTar, "neither an OCI archive (index.json, oci-layout) nor a docker save tarball (manifest.json)"},
		{escaping, `"../outside" is outside the archive`},
		{filepath.Join(dir, "missing.tar"), "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			_, err := readImages(tc.path, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNameImages(t *testing.T) {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	named := image{source: "a.tar", ref: name.MustParseReference("example.com/a:1"), content: img}
	unnamedImg := image{source: "b", content: img}
	tests := []struct {
		name    string
		images  []image
		ref     string
		want    []string
		wantErr string
	}{
		{name: "names of their own", images: []image{named}, want: []string{"example.com/a:1"}},
		{name: "--name renames the one image", images: []image{named}, ref: "model:2", want: []string{"docker.io/library/model:2"}},
		{name: "--name names an unnamed image", images: []image{unnamedImg}, ref: "example.com/b:1", want: []string{"example.com/b:1"}},
		{name: "unnamed without --name", images: []image{named, unnamedImg}, wantErr: "b: nothing names the image"},
		{name: "--name for two images", images: []image{named, unnamedImg}, ref: "x:1", wantErr: "--name x:1 names one image, and there are 2"},
		{name: "malformed --name", images: []image{named}, ref: "Bad Name", wantErr: "--name Bad Name:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nameImages(append([]image(nil), tc.images...), tc.ref)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, img := range got {
				names = append(names, displayName(img.ref))
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImageDirs(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "_out", "images")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	extra := t.TempDir()
	got, err := imageDirs(Options{BinDir: filepath.Join(root, "bin"), Images: []string{extra, tree, extra}})
	if diff := cmp.Diff([]string{tree, extra}, got); err != nil || diff != "" {
		t.Errorf("imageDirs = %v, %v; (-want +got):\n%s", got, err, diff)
	}
	got, err = imageDirs(Options{BinDir: "/usr/local/bin"})
	if err != nil || len(got) != 0 {
		t.Errorf("imageDirs of an installed tfk8s = %v, %v; want none", got, err)
	}
	_, err = imageDirs(Options{Images: []string{filepath.Join(extra, "missing")}})
	if want := "--images " + filepath.Join(extra, "missing") + ": no such directory"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

// writeTar writes a tar of files (name → content) to path.
func writeTar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
