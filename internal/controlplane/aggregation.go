package controlplane

import (
	"path/filepath"
	"time"

	"github.com/tfk8s/tfk8s/internal/pki"
)

// frontProxyUser is the name of kube-apiserver's front-proxy client certificate: the
// one name an extension API server accepts the headers of requests it proxies from.
const frontProxyUser = "front-proxy-client"

// AggregationPKI are the files of kube-apiserver's aggregation layer, through which it
// proxies requests for an extension API (metrics.k8s.io) to the server that serves it:
// a CA of its own (extension servers trust it to vouch for the user in the request's
// headers, so it must not be the cluster's client CA, whose every certificate would
// then impersonate anyone) and the client certificate it signs.
type AggregationPKI struct {
	CA, ProxyClient KeyPair
}

// AggregationPKIIn names the aggregation layer's files in dir.
func AggregationPKIIn(dir string) AggregationPKI {
	return AggregationPKI{
		CA:          KeyPair{Cert: filepath.Join(dir, "front-proxy-ca.crt"), Key: filepath.Join(dir, "front-proxy-ca.key")},
		ProxyClient: KeyPair{Cert: filepath.Join(dir, "front-proxy-client.crt"), Key: filepath.Join(dir, "front-proxy-client.key")},
	}
}

// Ensure writes the CA and the proxy's client certificate, valid for validity, unless
// they exist already.
func (a AggregationPKI) Ensure(validity time.Duration) error {
	if err := a.CA.EnsureCA("tfk8s-front-proxy-ca", validity); err != nil {
		return err
	}
	return a.ProxyClient.EnsureIssued(a.CA, pki.Names{CommonName: frontProxyUser}, ClientAuth, validity)
}

// APIServerArgs are kube-apiserver's flags of the aggregation layer. It publishes the
// request-header settings in kube-system's extension-apiserver-authentication
// ConfigMap, where extension servers read them. Aggregator routing: it sends requests
// to the endpoints of an APIService's Service, not its ClusterIP, which no
// kube-proxy on the host would translate.
func (a AggregationPKI) APIServerArgs() []string {
	return []string{
		"--requestheader-client-ca-file=" + a.CA.Cert,
		"--requestheader-allowed-names=" + frontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + a.ProxyClient.Cert,
		"--proxy-client-key-file=" + a.ProxyClient.Key,
		"--enable-aggregator-routing=true",
	}
}
