package cli

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/tfk8s/tfk8s/internal/testing/registryserver"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// loadCluster is a local cluster's state directory whose settings point at a real
// registry, with the registry's account (user:password): all that `tfk8s local load` reads of a
// cluster. A cluster's registry listens on its pod CIDR's first address, the
// bridge's: here 127.0.0.0/24's is the test registry's loopback address.
func loadCluster(t *testing.T, registryAddr, account string) string {
	t.Helper()
	dir := t.TempDir()
	_, port, _ := net.SplitHostPort(registryAddr)
	testutil.WriteFile(t, filepath.Join(dir, "cluster.yaml"), "podCIDR: 127.0.0.0/24\nports:\n  registry: "+port+"\n")
	if account != "" {
		testutil.WriteFile(t, filepath.Join(dir, "registry-credentials"), account+"\n")
	}
	return dir
}

// startRegistry starts a registry that takes requests from one account only, as a
// local cluster's does, and returns it with its account as USER:PASSWORD.
func startRegistry(t *testing.T) (*registryserver.Server, string) {
	reg := registryserver.Start(t, registryserver.WithAuth())
	return reg, reg.User + ":" + reg.Password
}

// TestLocalLoadPushesEveryKindOfImage loads an OCI layout (a multi-platform index),
// an OCI archive (gzipped) and a docker save tarball, and pulls each back from the
// registry by the local reference load printed: the same digest (for the docker
// tarball, the same config and layers). A second load of the layout sends nothing.
func TestLocalLoadPushesEveryKindOfImage(t *testing.T) {
	reg, account := startRegistry(t)
	dir := loadCluster(t, reg.Addr, account)
	f := &fixture{t: t, env: map[string]string{}}
	tmp := t.TempDir()

	idx, err := random.Index(1024, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(tmp, "model")
	writeLayout(t, layoutDir, idx, "example.com/ml/model:1")
	archived, err := random.Image(2048, 3)
	if err != nil {
		t.Fatal(err)
	}
	archiveDir := filepath.Join(tmp, "archived")
	writeLayout(t, archiveDir, indexOf(archived), "ghcr.io/team/archived:2")
	archive := filepath.Join(tmp, "archived.tar.gz")
	tarDir(t, archiveDir, archive)
	saved, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	dockerTar := filepath.Join(tmp, "busybox.tar")
	if err := tarball.WriteToFile(dockerTar, name.MustParseReference("busybox:1.36"), saved); err != nil {
		t.Fatal(err)
	}

	r := f.mustSucceed("local", "load", "--dir", dir, layoutDir, archive, dockerTar)
	for _, tc := range []struct {
		ref, local string
		content    v1.Image
		index      v1.ImageIndex
	}{
		{"example.com/ml/model:1", reg.Addr + "/ml/model:1", nil, idx},
		{"ghcr.io/team/archived:2", reg.Addr + "/team/archived:2", nil, indexOf(archived)},
		{"docker.io/library/busybox:1.36", reg.Addr + "/library/busybox:1.36", saved, nil},
	} {
		digest := pushedDigest(t, r.stdout, tc.ref, tc.local)
		got := pull(t, tc.local, reg.Auth())
		if got.Digest.String() != digest {
			t.Errorf("%s pulled back as %s, load printed %s", tc.local, got.Digest, digest)
		}
		if tc.index != nil {
			if want, _ := tc.index.Digest(); got.Digest != want {
				t.Errorf("%s pulled back as %s, the layout holds %s", tc.local, got.Digest, want)
			}
			continue
		}
		sameConfigAndLayers(t, tc.content, got)
	}

	if strings.Contains(r.stdout, ", 0 B sent, ") {
		t.Errorf("a first load into an empty registry sent nothing:\n%s", r.stdout)
	}
	again := f.mustSucceed("local", "load", "--dir", dir, layoutDir)
	if !strings.Contains(again.stdout, ", 0 B sent, ") {
		t.Errorf("a second load of %s sent blobs again:\n%s", layoutDir, again.stdout)
	}
	t.Logf("first load:\n%ssecond load:\n%s", r.stdout, again.stdout)
}

// TestLocalLoadName pushes an image under --name instead of the name it carries.
func TestLocalLoadName(t *testing.T) {
	reg, account := startRegistry(t)
	dir := loadCluster(t, reg.Addr, account)
	f := &fixture{t: t, env: map[string]string{}}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	dockerTar := filepath.Join(t.TempDir(), "image.tar")
	if err := tarball.WriteToFile(dockerTar, name.MustParseReference("example.com/old:1"), img); err != nil {
		t.Fatal(err)
	}
	r := f.mustSucceed("local", "load", "--dir", dir, dockerTar, "--name", "ghcr.io/me/renamed:2")
	local := reg.Addr + "/me/renamed:2"
	pushedDigest(t, r.stdout, "ghcr.io/me/renamed:2", local)
	sameConfigAndLayers(t, img, pull(t, local, reg.Auth()))
}

// TestLocalLoadErrors: what is no image is named with what it is not, and a cluster
// that is not up is said to be so, with what to run; nothing is pushed.
func TestLocalLoadErrors(t *testing.T) {
	reg, account := startRegistry(t)
	up := loadCluster(t, reg.Addr, account)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	testutil.WriteFile(t, notes, "not an image\n")
	f := &fixture{t: t, env: map[string]string{}}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"a text file", []string{"--dir", up, notes}, "error: " + notes + ": neither an OCI layout directory nor a tar file"},
		{"a directory that is no layout", []string{"--dir", up, filepath.Dir(notes)}, "error: " + filepath.Dir(notes) + ": a directory, but not an OCI layout (no index.json)"},
		{"no cluster", []string{"--dir", filepath.Join(up, "none"), notes}, "there is no local cluster in " + filepath.Join(up, "none") + ": run tfk8s local up --dir"},
		{"a cluster that is down", []string{"--dir", loadCluster(t, closedPort(t), "tfk8s:x"), notes}, "is not up, its registry does not answer"},
		{"no account: run as another user than up's", []string{"--dir", loadCluster(t, reg.Addr, ""), notes}, "reading the registry's account"},
		{"a wrong password, or a stale account", []string{"--dir", loadCluster(t, reg.Addr, reg.User+":guess"), notes}, "refuses the account in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.tfk8s(append([]string{"local", "load"}, tc.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("want an error containing %q, got %s", tc.wantErr, r)
			}
		})
	}
}

// pushedDigest returns the digest load printed for ref pushed as local.
func pushedDigest(t *testing.T, stdout, ref, local string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^pushed ` + regexp.QuoteMeta(ref) + ` as ` + regexp.QuoteMeta(local) + ` \(digest (sha256:[0-9a-f]{64}), `)
	m := re.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("load printed no line for %s as %s:\n%s", ref, local, stdout)
	}
	return m[1]
}

// pull fetches ref's manifest from the registry, as auth.
func pull(t *testing.T, ref string, auth authn.Authenticator) *remote.Descriptor {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return desc
}

// sameConfigAndLayers checks that the pulled image has want's config and layers.
func sameConfigAndLayers(t *testing.T, want v1.Image, got *remote.Descriptor) {
	t.Helper()
	img, err := got.Image()
	if err != nil {
		t.Fatal(err)
	}
	w, werr := configAndLayers(want)
	g, gerr := configAndLayers(img)
	if werr != nil || gerr != nil || !slices.Equal(w, g) {
		t.Errorf("%s: config and layers %v (%v), want %v (%v)", got.Digest, g, gerr, w, werr)
	}
}

// configAndLayers lists an image's config digest and its layers' diff IDs.
func configAndLayers(img v1.Image) ([]string, error) {
	cfg, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	out := []string{cfg.String()}
	layers, err := img.Layers()
	for _, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			return nil, err
		}
		out = append(out, d.String())
	}
	return out, err
}

// indexOf wraps an image in a one-platform index, as make images writes them.
func indexOf(img v1.Image) v1.ImageIndex {
	return mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
}

// writeLayout writes idx as an OCI layout in dir, named ref as make images does.
func writeLayout(t *testing.T, dir string, idx v1.ImageIndex, ref string) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err != nil {
		t.Fatal(err)
	}
}

// tarDir writes the files under src as a gzipped tar at dst: an OCI archive.
func tarDir(t *testing.T, src, dst string) {
	t.Helper()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(tw, in)
		return err
	})
	for _, c := range []io.Closer{tw, zw, out} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
