package cli

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/scheme"
)

// clients reach the cluster named by the kubeconfig flags.
type clients struct {
	// client reads and writes TFJobs, Secrets, pods and events.
	client client.Client
	// kube streams pod logs, which the controller-runtime client cannot.
	kube kubernetes.Interface
	// namespace is -n, else the kubeconfig context's, else "default".
	namespace string
}

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
	return connect(cfg, ns)
}

// connect makes the clients of cfg's credentials, acting in namespace.
func connect(cfg *rest.Config, namespace string) (*clients, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return &clients{client: c, kube: kube, namespace: namespace}, nil
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
