package cli

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/jobs"
)

// clients reach the cluster named by the kubeconfig flags: -n, else the kubeconfig
// context's namespace, else "default".
type clients = jobs.Clients

// clients connects to the cluster.
func (o *rootOptions) clients() (*clients, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	return jobs.Connect(cfg, ns)
}

// restConfig is the client configuration of the cluster. Without a kubeconfig, --server
// or a pod's service account it is a noClusterError, not client-go's last resort of
// localhost:8080, which would only fail later, and less clearly.
func (o *rootOptions) restConfig() (*rest.Config, error) {
	if err := o.checkClusterNamed(); err != nil {
		return nil, err
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// checkClusterNamed returns a noClusterError when nothing names a cluster.
func (o *rootOptions) checkClusterNamed() error {
	if o.kube.APIServer != nil && *o.kube.APIServer != "" {
		return nil
	}
	loader := o.kube.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	if len(raw.Clusters) > 0 {
		return nil
	}
	if _, err := rest.InClusterConfig(); err == nil {
		return nil
	}
	return &noClusterError{kubeconfig: strings.Join(loader.ConfigAccess().GetLoadingPrecedence(), ":")}
}

// apiServer is the API server's host:port, "" if no cluster is named: where a
// connection that failed counts as the cluster's unavailability.
func (o *rootOptions) apiServer() string {
	cfg, err := o.restConfig()
	if err != nil {
		return ""
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return ""
	}
	return u.Host
}

// namespace returns the namespace a command acts in: -n, else the kubeconfig
// context's, else "default". It needs no connection, so render works offline.
func (o *rootOptions) namespace() (string, error) {
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// namespaceGiven reports whether -n was given on the command line.
func (o *rootOptions) namespaceGiven() bool {
	return o.kube.Namespace != nil && *o.kube.Namespace != ""
}
