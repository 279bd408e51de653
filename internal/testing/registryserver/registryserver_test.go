package registryserver

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// TestPushThenPull pushes an image and an index and pulls both back by the returned
// references, with and without auth; without credentials an authenticated registry
// answers 401.
func TestPushThenPull(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"anonymous", nil},
		{"htpasswd", []Option{WithAuth()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, tc.opts...)
			img, err := random.Image(512, 2)
			if err != nil {
				t.Fatal(err)
			}
			idx, err := random.Index(256, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			imgRef := s.Push(t, img, "tfk8s/image:1")
			idxRef := s.Push(t, idx, "tfk8s/index:1")
			if want := s.Addr + "/tfk8s/image:1"; imgRef != want {
				t.Errorf("Push returned %q, want %q", imgRef, want)
			}
			wantDigest(t, img, pulled(t, imgRef, s.Auth()), "image")
			wantDigest(t, idx, pulled(t, idxRef, s.Auth()), "index")
			if s.User == "" {
				return
			}
			ref, _ := name.ParseReference(imgRef, name.Insecure)
			_, err = remote.Head(ref, remote.WithAuth(authn.Anonymous))
			var terr *transport.Error
			if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
				t.Errorf("anonymous HEAD %s: got %v, want 401 Unauthorized", imgRef, err)
			}
		})
	}
}

// pulled returns the manifest digest ref resolves to.
func pulled(t *testing.T, ref string, auth authn.Authenticator) v1.Hash {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	return desc.Digest
}

// wantDigest compares the digest of what was pushed with what was pulled.
func wantDigest(t *testing.T, pushed interface{ Digest() (v1.Hash, error) }, got v1.Hash, what string) {
	t.Helper()
	want, err := pushed.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%s pulled back as %s, pushed as %s", what, got, want)
	}
}
