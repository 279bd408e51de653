// Command tfk8s-dashboard is the tfk8s web dashboard as it runs in a cluster (the
// chart's dashboard Deployment): tfk8s dashboard --in-cluster, where each user signs
// in with a bearer token and every request to the API server is made with it. Its own
// ServiceAccount only reviews tokens. It links the dashboard alone, not the CLI.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfk8s/tfk8s/internal/dashboard"
)

func main() {
	// The controller-runtime client logs nothing an operator needs; unset, it complains.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

// run serves the dashboard with the flags of tfk8s dashboard --in-cluster that the
// chart gives it, and kubectl's -n, --kubeconfig and --context.
func run(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("tfk8s-dashboard", pflag.ContinueOnError)
	o := dashboard.RunOptions{InCluster: true, Out: os.Stdout, ErrOut: os.Stderr}
	fs.StringVar(&o.Address, "address", dashboard.DefaultAddress, "HOST:PORT to listen on")
	fs.BoolVar(&o.InCluster, "in-cluster", true, "ask users to sign in with a bearer token and act with it (always)")
	fs.StringSliceVar(&o.S3Endpoints, strings.TrimPrefix(dashboard.S3EndpointsFlag, "--"), nil,
		"an S3 endpoint (host:port) whose logs and artifacts the dashboard may read, repeatable; default none")
	fs.BoolVar(&o.MetricsUnauthenticated, strings.TrimPrefix(dashboard.MetricsFlag, "--"), false,
		"serve /metrics to anyone who reaches the dashboard, for a scraper that cannot sign in; default: signed-in users only")
	fs.StringSliceVar(&o.TrustedProxies, strings.TrimPrefix(dashboard.TrustedProxyFlag, "--"), nil,
		"an address or CIDR of a proxy (an ingress) whose X-Forwarded-For names the client, for counting failed sign-ins; repeatable")
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "kubeconfig of the dashboard's own credentials (default: its ServiceAccount)")
	fs.StringVar(&overrides.CurrentContext, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&overrides.Context.Namespace, "namespace", "n", "", "the namespace shown first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.InCluster = true
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	o.Config = func() (*rest.Config, error) {
		cfg, err := loader.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		return cfg, nil
	}
	o.Namespace = func() (string, error) {
		ns, _, err := loader.Namespace()
		if err != nil {
			return "", fmt.Errorf("loading kubeconfig: %w", err)
		}
		return ns, nil
	}
	return dashboard.Run(ctx, o)
}
