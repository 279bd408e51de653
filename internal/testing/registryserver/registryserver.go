// Package registryserver runs a real OCI registry for tfk8s's tests: the CNCF
// Distribution registry (bin/registry) with filesystem storage in a temporary
// directory, on a free 127.0.0.1 port, plain HTTP, optionally behind htpasswd basic
// auth with generated credentials. Tests push images to it with Push and point the code
// under test at Addr.
package registryserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// startTimeout bounds how long the registry may take to answer after it is started.
const startTimeout = 30 * time.Second

// Server is a running registry.
type Server struct {
	// Addr is 127.0.0.1:PORT, plain HTTP: image references start with it.
	Addr string
	// User and Password are the basic-auth credentials WithAuth asks for, else empty.
	User, Password string
	// Dir is the registry's storage root.
	Dir string

	logDir string
	proc   *proc.Process
}

// Option changes how Start runs the registry.
type Option func(*Server)

// WithAuth puts the registry behind htpasswd basic auth, with a generated user and
// password in Server.User and Server.Password: to test that credentials reach it.
func WithAuth() Option {
	return func(s *Server) {
		s.User, s.Password = "tfk8s"+randomHex(4), randomHex(16)
	}
}

// Start starts a registry with empty storage and waits until it answers GET /v2/; it
// is stopped when the test ends, and a failed test's log gets the registry's log.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "registry")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("registry not found in %s: run make tools, or set TFK8S_BIN", binDir)
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	s := &Server{
		Addr:   "127.0.0.1:" + strconv.Itoa(ports[0]),
		Dir:    filepath.Join(tmp, "storage"),
		logDir: tmp,
	}
	for _, o := range opts {
		o(s)
	}
	config, err := s.writeConfig(tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() && s.proc != nil {
			t.Logf("registry log (%s):\n%s", s.proc.LogPath(), s.proc.LogTail(60))
		}
	})
	if err := s.start(bin, config); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeConfig writes the registry's configuration, and its htpasswd file when the
// registry has a user, into dir; it returns the configuration's path.
func (s *Server) writeConfig(dir string) (string, error) {
	auth := ""
	if s.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(s.Password), bcrypt.MinCost)
		if err != nil {
			return "", fmt.Errorf("hashing the registry password: %w", err)
		}
		htpasswd := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(s.User+":"+string(hash)+"\n"), 0o600); err != nil {
			return "", err
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: tfk8s-test\n    path: %q\n", htpasswd)
	}
	config := fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
%s`, s.Dir, s.Addr, auth)
	path := filepath.Join(dir, "config.yml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// start runs the registry and waits until GET /v2/ answers (401 counts, with auth).
func (s *Server) start(bin, config string) error {
	// No trace exporter: the registry would otherwise send its traces to an OTLP
	// collector on localhost and log each failure. Its own process group, so that stop
	// reaches every process.
	p, err := proc.Start("registry", bin, []string{"serve", config}, s.logDir, proc.Options{
		Env:      []string{"OTEL_TRACES_EXPORTER=none"},
		OwnGroup: true,
	})
	if err != nil {
		return err
	}
	s.proc = p

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	url := "http://" + s.Addr + "/v2/"
	for {
		err := answers(ctx, url)
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("the registry exited at start: %s", p.LogTail(60))
		case <-ctx.Done():
			return fmt.Errorf("the registry did not answer within %v: %v; log: %s", startTimeout, err, p.LogTail(60))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// answers gets url and wants 200 OK or 401 Unauthorized.
func answers(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// stop stops the registry, SIGTERM first and SIGKILL after 5 seconds.
func (s *Server) stop() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Stop(5 * time.Second)
	s.proc = nil
}

// Auth returns the registry's credentials, or anonymous access without WithAuth.
func (s *Server) Auth() authn.Authenticator {
	if s.User == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: s.User, Password: s.Password}
}

// Push pushes img, a v1.Image or a v1.ImageIndex, to repoAndTag
// ("tfk8s/python:3.11") in the registry and returns its full reference
// ("127.0.0.1:PORT/tfk8s/python:3.11").
func (s *Server) Push(t testing.TB, img remote.Taggable, repoAndTag string) string {
	t.Helper()
	ref, err := name.ParseReference(s.Addr+"/"+repoAndTag, name.Insecure)
	if err != nil {
		t.Fatalf("parsing %q: %v", repoAndTag, err)
	}
	if err := remote.Push(ref, img, remote.WithAuth(s.Auth())); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	return ref.String()
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
