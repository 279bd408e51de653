package node

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// dockerHub is how go-containerregistry names Docker Hub, the registry of bare names
// like busybox; users write docker.io.
const dockerHub = name.DefaultRegistry

// mirror is where the images of one registry are pulled from first.
type mirror struct {
	// host is the mirror's host[:port]; prefix, if any, leads every repository path.
	host, prefix string
	// insecure: the mirror speaks plain HTTP.
	insecure bool
}

// parseMirrors checks and normalises --registry-mirror REGISTRY=URL pairs: the
// registry as go-containerregistry names it (docker.io is index.docker.io; * stays),
// the URL http:// or https:// with a host.
func parseMirrors(m map[string]string) (map[string]mirror, error) {
	out := make(map[string]mirror, len(m))
	for reg, raw := range m {
		bad := func(why string) error { return fmt.Errorf("--registry-mirror %s=%s: %s", reg, raw, why) }
		if reg == "" {
			return nil, bad("no registry before =")
		}
		u, err := url.Parse(raw)
		if err != nil {
			return nil, bad(err.Error())
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return nil, bad("the mirror URL must start with http:// or https://")
		}
		if u.Host == "" {
			return nil, bad("the mirror URL has no host")
		}
		out[registryKey(reg)] = mirror{host: u.Host, prefix: strings.Trim(u.Path, "/"), insecure: u.Scheme == "http"}
	}
	return out, nil
}

// registryKey names a registry host as references resolve it: docker.io and its
// aliases are index.docker.io.
func registryKey(host string) string {
	switch host {
	case "docker.io", "registry-1.docker.io":
		return dockerHub
	}
	return host
}

// pullSources are where ref is pulled from, in order: the mirror of its registry (or
// of *), then the registry itself.
func pullSources(ref name.Reference, mirrors map[string]mirror) []name.Reference {
	m, ok := mirrors[ref.Context().RegistryStr()]
	if !ok {
		m, ok = mirrors["*"]
	}
	if !ok {
		return []name.Reference{ref}
	}
	repo := m.host + "/" + ref.Context().RepositoryStr()
	if m.prefix != "" {
		repo = m.host + "/" + m.prefix + "/" + ref.Context().RepositoryStr()
	}
	var opts []name.Option
	if m.insecure {
		opts = append(opts, name.Insecure)
	}
	sep := ":"
	if _, isDigest := ref.(name.Digest); isDigest {
		sep = "@"
	}
	mref, err := name.ParseReference(repo+sep+ref.Identifier(), opts...)
	if err != nil {
		return []name.Reference{ref}
	}
	return []name.Reference{mref, ref}
}

// pullSecretKeychain holds the credentials of a pod's imagePullSecrets by registry
// host; the first secret naming a host wins, as with the kubelet.
type pullSecretKeychain map[string]authn.AuthConfig

// Resolve implements authn.Keychain: the credentials for the registry (or mirror)
// being contacted, anonymous if no secret names it.
func (k pullSecretKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if cfg, ok := k[registryKey(target.RegistryStr())]; ok {
		return authn.FromConfig(cfg), nil
	}
	return authn.Anonymous, nil
}

// add reads the credentials of one Secret of type kubernetes.io/dockerconfigjson or
// kubernetes.io/dockercfg.
func (k pullSecretKeychain) add(s *corev1.Secret) error {
	var auths map[string]authn.AuthConfig
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
			return fmt.Errorf("reading %s of Secret %s: %w", corev1.DockerConfigJsonKey, s.Name, err)
		}
		auths = cfg.Auths
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths); err != nil {
			return fmt.Errorf("reading %s of Secret %s: %w", corev1.DockerConfigKey, s.Name, err)
		}
	default:
		return fmt.Errorf("Secret %s is of type %q, not %s or %s", s.Name, s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	for key, cfg := range auths {
		host := registryKey(credentialHost(key))
		if _, seen := k[host]; !seen && host != "" {
			k[host] = cfg
		}
	}
	return nil
}

// credentialHost is the registry host of a docker config key, which may be a URL
// ("https://index.docker.io/v1/") or carry a path.
func credentialHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}
