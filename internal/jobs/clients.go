// Package jobs is what the front ends (the CLI, the dashboard) read of TFJobs in a
// cluster and do to them: a job, its pods in replica order and its events, its logs
// from pods or S3, its files in S3, suspending it and asking for its TensorBoard.
// Both front ends call it, so that they show and do the same.
package jobs

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/scheme"
)

// Clients reach the cluster with one user's credentials, acting in one namespace.
type Clients struct {
	// Client reads and writes TFJobs, Secrets, pods and events.
	Client client.Client
	// Kube streams pod logs, which the controller-runtime client cannot.
	Kube kubernetes.Interface
	// Namespace is the namespace acted in.
	Namespace string
}

// Connect makes the clients of cfg's credentials, acting in namespace.
func Connect(cfg *rest.Config, namespace string) (*Clients, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return &Clients{Client: c, Kube: kube, Namespace: namespace}, nil
}

// In is the clients acting in namespace.
func (cs *Clients) In(namespace string) *Clients {
	in := *cs
	in.Namespace = namespace
	return &in
}
