package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// TestEnsureRegistryCredential: the first up makes an account kept 0600 and an
// htpasswd holding it; a second up keeps both as they are; an htpasswd that no
// longer holds the account is written again.
func TestEnsureRegistryCredential(t *testing.T) {
	p := pathsIn(t.TempDir())
	if err := os.MkdirAll(p.run, 0o700); err != nil {
		t.Fatal(err)
	}
	cred, err := ensureRegistryCredential(p)
	if err != nil {
		t.Fatal(err)
	}
	if cred.username != registryUser || len(cred.password) != 40 {
		t.Errorf("account %q with a password of %d characters, want %s with 40", cred.username, len(cred.password), registryUser)
	}
	for _, path := range []string{registryCredentialPath(p), registryHtpasswdPath(p)} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", path, info, err)
		}
	}
	user, hash, _ := strings.Cut(strings.TrimSpace(readFile(t, registryHtpasswdPath(p))), ":")
	if user != registryUser || bcrypt.CompareHashAndPassword([]byte(hash), []byte(cred.password)) != nil {
		t.Errorf("the htpasswd does not hold the account")
	}
	credFile, htpasswd := readFile(t, registryCredentialPath(p)), readFile(t, registryHtpasswdPath(p))
	again, err := ensureRegistryCredential(p)
	if err != nil || again != cred {
		t.Errorf("a second up: %v, %v; want the same account", again, err)
	}
	if readFile(t, registryCredentialPath(p)) != credFile || readFile(t, registryHtpasswdPath(p)) != htpasswd {
		t.Errorf("a second up rewrote the account or the htpasswd")
	}
	if err := os.WriteFile(registryHtpasswdPath(p), []byte("intruder:$2y$05$abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureRegistryCredential(p); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, registryHtpasswdPath(p)); strings.Contains(got, "intruder") || !strings.HasPrefix(got, registryUser+":") {
		t.Errorf("the htpasswd is now %q, want the account's alone", got)
	}
}

// readFile is the content of path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
