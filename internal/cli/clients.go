package cli

import (
	"fmt"

	"github.com/tfk8s/tfk8s/internal/jobs"
)

// clients reach the cluster named by the kubeconfig flags: -n, else the kubeconfig
// context's namespace, else "default".
type clients = jobs.Clients

// clients connects to the cluster.
func (o *rootOptions) clients() (*clients, error) {
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	return jobs.Connect(cfg, ns)
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
