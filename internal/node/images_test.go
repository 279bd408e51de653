package node

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPullSources(t *testing.T) {
	mirrors, err := parseMirrors(map[string]string{"ghcr.io": "http://127.0.0.1:5000", "docker.io": "https://mirror.example/hub/"})
	if err != nil {
		t.Fatal(err)
	}
	star, _ := parseMirrors(map[string]string{"*": "http://127.0.0.1:5000"})
	cases := []struct {
		ref     string
		mirrors map[string]mirror
		want    []string
	}{
		{"ghcr.io/tfk8s/python:3.11", mirrors, []string{"127.0.0.1:5000/tfk8s/python:3.11", "ghcr.io/tfk8s/python:3.11"}},
		{"busybox", mirrors, []string{"mirror.example/hub/library/busybox:latest", "index.docker.io/library/busybox:latest"}},
		{"quay.io/x/y@sha256:" + strings.Repeat("a", 64), mirrors, []string{"quay.io/x/y@sha256:" + strings.Repeat("a", 64)}},
		{"quay.io/x/y@sha256:" + strings.Repeat("a", 64), star, []string{"127.0.0.1:5000/x/y@sha256:" + strings.Repeat("a", 64), "quay.io/x/y@sha256:" + strings.Repeat("a", 64)}},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			ref, err := name.ParseReference(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range pullSources(ref, tc.mirrors) {
				got = append(got, r.Name())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := parseMirrors(map[string]string{"ghcr.io": "127.0.0.1:5000"}); err == nil || !strings.Contains(err.Error(), "--registry-mirror ghcr.io=127.0.0.1:5000") {
		t.Errorf("a mirror without a scheme: %v, want an error naming the flag", err)
	}
}

func TestPullSecretKeychain(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("ann:pw"))
	kc := pullSecretKeychain{}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "json"}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{
			corev1.DockerConfigJsonKey: []byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"` + auth + `"},"127.0.0.1:5000":{"username":"bob","password":"pw2"}}}`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Type: corev1.SecretTypeDockercfg, Data: map[string][]byte{
			corev1.DockerConfigKey: []byte(`{"ghcr.io":{"username":"cat","password":"pw3"},"127.0.0.1:5000":{"username":"late","password":"x"}}`)}},
	} {
		if err := kc.add(s); err != nil {
			t.Fatal(err)
		}
	}
	for ref, want := range map[string]string{"busybox": "ann", "127.0.0.1:5000/a/b": "bob", "ghcr.io/a/b": "cat", "quay.io/a/b": ""} {
		r, _ := name.ParseReference(ref)
		a, err := kc.Resolve(r.Context())
		if err != nil {
			t.Fatal(err)
		}
		cfg, _ := a.Authorization()
		if cfg.Username != want {
			t.Errorf("%s: user %q, want %q", ref, cfg.Username, want)
		}
	}
	if err := kc.add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque"}, Type: corev1.SecretTypeOpaque}); err == nil {
		t.Error("an Opaque secret was taken for a pull secret")
	}
}

// testRegistry is an in-memory registry that counts blob downloads.
func testRegistry(t *testing.T) (host string, blobGets *atomic.Int32) {
	blobGets = &atomic.Int32{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			blobGets.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), blobGets
}

func push(t *testing.T, ref string, img any) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	switch img := img.(type) {
	case v1.Image:
		err = remote.Write(r, img)
	case v1.ImageIndex:
		err = remote.WriteIndex(r, img)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestStorePull: a pull through a mirror that lacks the image falls back to the
// registry, picks the node's platform from an index, and a later pull of a new config
// on the same layers fetches no layer again and unpacks a second root.
func TestStorePull(t *testing.T) {
	host, blobGets := testRegistry(t)
	emptyMirror, _ := testRegistry(t)
	mine, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	mine, _ = mutate.ConfigFile(mine, &v1.ConfigFile{OS: "linux", Architecture: runtime.GOARCH, Config: v1.Config{Cmd: []string{"/x"}}})
	other, _ := random.Image(512, 1)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
		mutate.IndexAddendum{Add: mine, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	push(t, host+"/tfk8s/app:1", idx)

	store, err := newImageStore(t.TempDir(), map[string]string{"*": "http://" + emptyMirror})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(store.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("image directory %v %v, want it closed to all but root (0700): its roots hold set-user-ID programs", fi.Mode(), err)
	}
	ref, _ := name.ParseReference(host + "/tfk8s/app:1")
	if _, ok := store.lookup(ref); ok {
		t.Fatal("an image was present before any pull")
	}
	img, _, err := store.pull(context.Background(), ref, pullSecretKeychain{})
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	if want := host + "/tfk8s/app@" + idxDigest.String(); img.id != want || img.config.Cmd[0] != "/x" {
		t.Errorf("pulled %s with cmd %v, want %s with /x", img.id, img.config.Cmd, want)
	}
	if cached, ok := store.lookup(ref); !ok || cached.id != img.id || cached.root != img.root {
		t.Errorf("lookup after the pull: %+v %t", cached, ok)
	}

	before := blobGets.Load()
	changed, _ := mutate.Config(mine, v1.Config{Cmd: []string{"/y"}})
	push(t, host+"/tfk8s/app:1", changed)
	img2, _, err := store.pull(context.Background(), ref, pullSecretKeychain{})
	if err != nil {
		t.Fatal(err)
	}
	if got := blobGets.Load() - before; got != 1 || img2.root == img.root || img2.config.Cmd[0] != "/y" {
		t.Errorf("second pull: %d blobs fetched (want the config only), root %s (first %s), cmd %v", got, img2.root, img.root, img2.config.Cmd)
	}
	roots, _ := os.ReadDir(filepath.Join(store.dir, "roots", "sha256"))
	tmp, _ := os.ReadDir(filepath.Join(store.dir, "tmp"))
	if len(roots) != 2 || len(tmp) != 0 {
		t.Errorf("roots %d, temporary entries %d; want 2 and 0", len(roots), len(tmp))
	}
}

func TestStorePullErrorNamesMirrorAndRegistry(t *testing.T) {
	host, _ := testRegistry(t)
	mirror, _ := testRegistry(t)
	store, err := newImageStore(t.TempDir(), map[string]string{host: "http://" + mirror})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/tfk8s/absent:1")
	_, _, err = store.pull(context.Background(), ref, authn.DefaultKeychain)
	if err == nil || !strings.Contains(err.Error(), "mirror "+mirror) || strings.Count(err.Error(), "NAME_UNKNOWN") != 2 {
		t.Errorf("error %v, want the mirror's and the registry's NAME_UNKNOWN", err)
	}
}

func TestPullPolicyDefaults(t *testing.T) {
	for ref, want := range map[string]corev1.PullPolicy{"busybox": corev1.PullAlways, "busybox:latest": corev1.PullAlways, "busybox:1.36": corev1.PullIfNotPresent,
		"busybox@sha256:" + strings.Repeat("a", 64): corev1.PullIfNotPresent} {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := pullPolicy("", r); got != want {
			t.Errorf("%s: %s, want %s", ref, got, want)
		}
		if got := pullPolicy(corev1.PullNever, r); got != corev1.PullNever {
			t.Errorf("%s: an explicit Never became %s", ref, got)
		}
	}
}
