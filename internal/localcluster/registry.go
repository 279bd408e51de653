package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
)

// registryEnv is the registry's environment: no trace exporter, or it would send its
// traces to an OTLP collector on localhost and log each failure.
var registryEnv = []string{"OTEL_TRACES_EXPORTER=none"}

// registryAddr is where the registry listens, host:port: on the bridge, where the
// nodes' containerd pulls from it and the user pushes to it; the nodes keep their
// pods from reaching it.
func registryAddr(opts Options) string {
	return netip.AddrPortFrom(registryHost(opts), uint16(opts.Ports.Registry)).String()
}

// registryHost is the registry's address, the bridge's: the nodes' containerd pulls
// from their own network namespaces.
func registryHost(opts Options) netip.Addr {
	br, _ := bridgeIP(opts.PodCIDR) // checked by withDefaults
	return br
}

// registryURL is the registry's URL, plain HTTP: what the node mirrors every registry to.
func registryURL(opts Options) string { return "http://" + registryAddr(opts) }

// registryArgs are the registry's arguments: its configuration file.
func registryArgs(p paths) []string { return []string{"serve", p.registryConfig} }

// registryConfig is the registry's configuration: filesystem storage in the state
// directory, plain HTTP on the bridge's address, the one account of its htpasswd
// (registryauth.go), deletes allowed so that images can be replaced and cleaned up.
func registryConfig(opts Options, p paths) []byte {
	return fmt.Appendf(nil, `# The image registry of the tfk8s local cluster (tfk8s local up).
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
auth:
  htpasswd:
    realm: tfk8s-local
    path: %s
`, strconv.Quote(p.registryData), strconv.Quote(registryAddr(opts)), strconv.Quote(registryHtpasswdPath(p)))
}

// startRegistry starts the registry and waits until it answers, then pushes the
// image layouts of Options.Images and of the source tree into it. It returns the
// registry's account and the digests pushed, by reference.
func startRegistry(ctx context.Context, l launcher, p paths) (registryCredential, map[string]string, error) {
	if err := os.MkdirAll(p.registryData, 0o700); err != nil {
		return registryCredential{}, nil, fmt.Errorf("creating the registry's storage: %w", err)
	}
	cred, err := ensureRegistryCredential(p)
	if err != nil {
		return registryCredential{}, nil, err
	}
	if err := writeFileAtomic(p.registryConfig, registryConfig(l.opts, p), 0o644); err != nil {
		return cred, nil, err
	}
	reg, _, err := l.ensureRunning(compRegistry, registryArgs(p), registryEnv, false)
	if err != nil {
		return cred, nil, err
	}
	if err := l.waitReady(ctx, reg, "the registry on "+registryAddr(l.opts), func(ctx context.Context) error {
		return registryOK(ctx, registryURL(l.opts), cred)
	}); err != nil {
		return cred, nil, err
	}
	pushed, err := pushImages(ctx, l.opts, cred)
	return cred, pushed, err
}

// pushImages pushes every image layout Up finds (see imageDirs) into the registry,
// a line each, and returns their digests by reference; blobs the registry has are not
// sent again.
func pushImages(ctx context.Context, opts Options, cred registryCredential) (map[string]string, error) {
	dirs, err := imageDirs(opts)
	if err != nil {
		return nil, err
	}
	var images []image
	for _, dir := range dirs {
		found, err := layoutsIn(dir)
		if err != nil {
			return nil, err
		}
		images = append(images, found...)
	}
	if _, err := nameImages(images, ""); err != nil {
		return nil, err
	}
	pushed := map[string]string{}
	for _, img := range images {
		if err := pushImage(ctx, img, registryAddr(opts), cred, opts.Progress); err != nil {
			return pushed, err
		}
		if digest, _, err := digestAndSize(img.content); err == nil {
			pushed[img.ref.String()] = digest.String()
		}
	}
	return pushed, nil
}
