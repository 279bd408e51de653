package localcluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/crypto/bcrypt"
)

// The registry takes requests only with the one account of the cluster, kept in the
// state directory (mode 0600): the CLI pushes with it, and
// each node's containerd pulls with it, from the Authorization header its hosts.toml
// sends. The registry listens on the bridge's address, which every user of the host
// reaches; without the account, any of them could replace the images the pods run.
// Distribution's htpasswd authentication has no read-only access, so the nodes hold
// the same account; the pods reach the registry not at all (localnode's firewall).

// registryUser is the name of the registry's one account.
const registryUser = "tfk8s"

// registryCredentialFile is, in the state directory, the account: USER:PASSWORD.
const registryCredentialFile = "registry-credentials"

// registryHtpasswdFile is, in the state directory's cluster/, the registry's htpasswd.
const registryHtpasswdFile = "registry.htpasswd"

// registryCredential is the registry's account.
type registryCredential struct{ username, password string }

// authorization is the HTTP Authorization header value of c.
func (c registryCredential) authorization() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.username+":"+c.password))
}

// authenticator is c for go-containerregistry's pushes.
func (c registryCredential) authenticator() authn.Authenticator {
	return &authn.Basic{Username: c.username, Password: c.password}
}

// registryCredentialPath is where the registry's account of the cluster in p is kept.
func registryCredentialPath(p paths) string { return filepath.Join(p.dir, registryCredentialFile) }

// registryHtpasswdPath is the htpasswd of the registry of the cluster in p.
func registryHtpasswdPath(p paths) string { return filepath.Join(p.run, registryHtpasswdFile) }

// readRegistryCredential reads the account of the cluster in p.
func readRegistryCredential(p paths) (registryCredential, error) {
	data, err := os.ReadFile(registryCredentialPath(p))
	if err != nil {
		return registryCredential{}, fmt.Errorf("reading the registry's account: %w", err)
	}
	user, password, _ := strings.Cut(strings.TrimSpace(string(data)), ":")
	if user == "" || password == "" {
		return registryCredential{}, fmt.Errorf("%s holds no USER:PASSWORD of the registry", registryCredentialPath(p))
	}
	return registryCredential{username: user, password: password}, nil
}

// ensureRegistryCredential returns the registry's account, made and saved (0600) the
// first time, and writes the registry's htpasswd for it unless the one there holds it.
func ensureRegistryCredential(p paths) (registryCredential, error) {
	cred, err := readRegistryCredential(p)
	if errors.Is(err, fs.ErrNotExist) {
		cred = registryCredential{username: registryUser, password: randomHex(20)}
		err = writeFileAtomic(registryCredentialPath(p), []byte(cred.username+":"+cred.password+"\n"), 0o600)
	}
	if err != nil {
		return cred, err
	}
	if htpasswdHolds(registryHtpasswdPath(p), cred) {
		return cred, nil
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(cred.password), bcrypt.DefaultCost)
	if err != nil {
		return cred, fmt.Errorf("hashing the registry's password: %w", err)
	}
	return cred, writeFileAtomic(registryHtpasswdPath(p), fmt.Appendf(nil, "%s:%s\n", cred.username, hash), 0o600)
}

// htpasswdHolds reports whether the htpasswd at path holds cred and nothing else: a
// second up leaves it, and the registry's reload, alone.
func htpasswdHolds(path string, cred registryCredential) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	user, hash, ok := strings.Cut(strings.TrimSpace(string(data)), ":")
	return ok && user == cred.username && !strings.Contains(hash, "\n") &&
		bcrypt.CompareHashAndPassword([]byte(hash), []byte(cred.password)) == nil
}

// registryOK checks that the registry at url answers /v2/ to cred.
func registryOK(ctx context.Context, url string, cred registryCredential) error {
	return httpOKAs(ctx, url+"/v2/", cred.authorization())
}
