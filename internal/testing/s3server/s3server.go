// Package s3server runs a real S3 server for tfk8s's tests: versitygw with its POSIX
// backend in a temporary directory, on a free 127.0.0.1 port, with generated root
// credentials and one bucket. The server can be stopped and restarted on the same port
// and directory, to test how clients live through an outage.
package s3server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/storage"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Bucket is the bucket every server is started with.
const Bucket = "tfk8s-test"

// startTimeout bounds how long a server may take to answer after it is started.
const startTimeout = 30 * time.Second

// Server is a running (or stopped) versitygw.
type Server struct {
	// Endpoint is host:port, plain HTTP.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Bucket exists when Start returns.
	Bucket string
	// Dir is the POSIX backend's root: buckets are its subdirectories.
	Dir string

	bin string
	// iamDir, when set, holds versitygw's internal IAM: accounts made through its
	// admin API, which the root keys sign.
	iamDir string
	// logDir holds versitygw.log, appended to across restarts.
	logDir string
	proc   *proc.Process
}

// Start starts a server with a fresh bucket; it is stopped when the test ends. It
// knows the root keys alone, as local mode's does.
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, false)
}

// StartWithAccounts starts a server as Start does, with versitygw's internal IAM: it
// makes accounts and reads bucket policies naming them, and answers an unknown key as
// AWS does (InvalidAccessKeyId).
func StartWithAccounts(t testing.TB) *Server {
	t.Helper()
	return startServer(t, true)
}

func startServer(t testing.TB, accounts bool) *Server {
	t.Helper()
	bin, err := binary("versitygw")
	if err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	s := &Server{
		Endpoint:  "127.0.0.1:" + strconv.Itoa(port),
		AccessKey: "tfk8s" + randomHex(6),
		SecretKey: randomHex(20),
		Bucket:    Bucket,
		Dir:       filepath.Join(tmp, "root"),
		bin:       bin,
		logDir:    tmp,
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if accounts {
		s.iamDir = filepath.Join(tmp, "iam")
		if err := os.Mkdir(s.iamDir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.MinioClient().MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", s.Bucket, err)
	}
	return s
}

// Config returns the storage configuration of the server.
func (s *Server) Config() storage.Config {
	return storage.Config{
		Endpoint:        s.Endpoint,
		AccessKeyID:     s.AccessKey,
		SecretAccessKey: s.SecretKey,
		Region:          storage.DefaultRegion,
		Bucket:          s.Bucket,
		Insecure:        true,
	}
}

// Env returns the environment variables that point tfk8s at the server, as NAME=value.
func (s *Server) Env() []string {
	return []string{
		tfjob.EnvS3Endpoint + "=" + s.Endpoint,
		tfjob.EnvS3Bucket + "=" + s.Bucket,
		tfjob.EnvAccessKeyID + "=" + s.AccessKey,
		tfjob.EnvSecretAccessKey + "=" + s.SecretKey,
		tfjob.EnvRegion + "=" + storage.DefaultRegion,
		tfjob.EnvS3Insecure + "=true",
	}
}

// Client returns a storage client for the server.
func (s *Server) Client(t testing.TB) *storage.Client {
	t.Helper()
	c, err := storage.New(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// MinioClient returns a plain minio-go client for the server: to wait for it and create
// its bucket without the code under test, and to compare tfk8s's uploads with raw ones.
func (s *Server) MinioClient() *minio.Client {
	mc, err := minio.New(s.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Region:     storage.DefaultRegion,
		MaxRetries: 1,
	})
	if err != nil {
		panic(err) // only a malformed endpoint gets here, and ours is well-formed
	}
	return mc
}

// Stop stops the server, SIGTERM first and SIGKILL after 5 seconds. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.proc == nil {
		return
	}
	_ = s.proc.Stop(5 * time.Second)
	s.proc = nil
}

// Restart starts the server again on the same port and directory after Stop, and
// waits until it answers.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// start runs versitygw and waits until it answers S3 requests.
func (s *Server) start() error {
	args := []string{"--port", s.Endpoint, "--quiet"}
	if s.iamDir != "" {
		args = append(args, "--iam-dir", s.iamDir)
	}
	// Its own process group, so Stop reaches every process; the log is appended to,
	// so that a restart keeps what the server said before.
	p, err := proc.Start("versitygw", s.bin, append(args, "posix", s.Dir), s.logDir, proc.Options{
		Env:      []string{"ROOT_ACCESS_KEY_ID=" + s.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + s.SecretKey},
		Append:   true,
		OwnGroup: true,
	})
	if err != nil {
		return err
	}
	s.proc = p

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	mc := s.MinioClient()
	for {
		_, err := mc.ListBuckets(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("versitygw exited at start: %s", p.LogTail(30))
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("versitygw did not answer within %v: %v; log: %s", startTimeout, err, p.LogTail(30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// binary finds a tool built into bin/: in $TFK8S_BIN, else in the bin/ directory of
// the first ancestor of the working directory that has one with the tool.
func binary(name string) (string, error) {
	if dir := os.Getenv("TFK8S_BIN"); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s not found in TFK8S_BIN=%s: run make versitygw", name, dir)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New(name + " not found in any bin/ above the working directory: run make versitygw, or set TFK8S_BIN")
		}
		dir = parent
	}
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
