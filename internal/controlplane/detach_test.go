package controlplane

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDetachedProcessLifecycle(t *testing.T) {
	dir := t.TempDir()
	p, err := StartDetached("sleeper", "/bin/sleep", []string{"60"}, []string{"A=1"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })

	found := FindDetached(dir, "sleeper")
	if found == nil || found.Pid() != p.Pid() {
		t.Fatalf("FindDetached = %v, want pid %d", found, p.Pid())
	}
	if found.Exited() {
		t.Error("a found running process reports it exited")
	}
	log, err := os.ReadFile(filepath.Join(dir, "sleeper.log"))
	if err != nil || !strings.Contains(string(log), "starting /bin/sleep 60") {
		t.Errorf("log = %q, %v; want the start recorded", log, err)
	}
	// Another process's view: a new session, so a Ctrl-C in the caller's terminal
	// does not reach it.
	if sid, err := exec.Command("ps", "-o", "sid=", "-p", strconv.Itoa(p.Pid())).Output(); err == nil && strings.TrimSpace(string(sid)) != strconv.Itoa(p.Pid()) {
		t.Errorf("session id %s, want the process's own %d", strings.TrimSpace(string(sid)), p.Pid())
	}

	if err := StopDetached(dir, "sleeper", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// StopDetached, as another process would, waited for the pid to end; this
	// process, its parent, reaps it a moment later.
	if !eventually(p.Exited) {
		t.Error("the process runs after StopDetached")
	}
	if _, err := os.Stat(filepath.Join(dir, "sleeper.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file after stopping: %v, want it removed", err)
	}
	if FindDetached(dir, "sleeper") != nil {
		t.Error("FindDetached found a stopped process")
	}
	if err := StopDetached(dir, "sleeper", time.Second); err != nil {
		t.Errorf("stopping a stopped process: %v", err)
	}
}

func TestStopDetachedKillsWhatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	p, err := StartDetached("stubborn", "/bin/sh", []string{"-c", "trap '' TERM; sleep 60 & wait"}, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the shell set its trap
	start := time.Now()
	if err := StopDetached(dir, "stubborn", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !eventually(p.Exited) {
		t.Error("the process survived StopDetached")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopping took %v", d)
	}
}

func TestFindDetachedIgnoresRecycledPids(t *testing.T) {
	tests := []struct {
		name, content string
	}{
		{"a live pid running another program", strconv.Itoa(os.Getpid()) + "\n/usr/bin/etcd\n"},
		{"no executable recorded", strconv.Itoa(os.Getpid()) + "\n"},
		{"a dead pid", "999999999\n/bin/sleep\n"},
		{"garbage", "not a pid\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "etcd.pid"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if p := FindDetached(dir, "etcd"); p != nil {
				t.Errorf("FindDetached = pid %d, want none", p.Pid())
			}
			if err := StopDetached(dir, "etcd", time.Second); err != nil {
				t.Errorf("StopDetached: %v", err)
			}
		})
	}
}

func TestLoadOrWriteCredentialsReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if first.adminToken == "" || second.adminToken != first.adminToken || string(second.caCertPEM) != string(first.caCertPEM) {
		t.Error("the credentials were not reused")
	}
	if err := os.Remove(filepath.Join(dir, "sa.key")); err != nil {
		t.Fatal(err)
	}
	third, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if third.adminToken == first.adminToken {
		t.Error("incomplete credentials were reused")
	}
}

// TestLoadOrWriteCredentialsNamesTheKubernetesService: a kept serving certificate
// that does not name the kubernetes Service's address (made by an older tfk8s) is
// replaced by one from the same CA that does, the other credentials kept.
func TestLoadOrWriteCredentialsNamesTheKubernetesService(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	caCert, caKey := readCA(t, first)
	old := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, old, caCert, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.servingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := loadOrWriteCredentials(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if second.adminToken != first.adminToken || string(second.caCertPEM) != string(first.caCertPEM) {
		t.Error("the other credentials were not kept")
	}
	pair, err := tls.LoadX509KeyPair(second.servingCert, second.servingKey)
	if err != nil {
		t.Fatalf("the new certificate and key: %v", err)
	}
	cert, _ := x509.ParseCertificate(pair.Certificate[0])
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Errorf("the new certificate is not the CA's: %v", err)
	}
	if err := cert.VerifyHostname(KubernetesServiceIP); err != nil {
		t.Errorf("the new certificate does not name the kubernetes Service: %v", err)
	}
}

// readCA reads the CA certificate and key of c.
func readCA(t *testing.T, c *credentials) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.caCert, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert, pair.PrivateKey.(*ecdsa.PrivateKey)
}

// eventually polls cond for a second.
func eventually(cond func() bool) bool {
	for range 100 {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
