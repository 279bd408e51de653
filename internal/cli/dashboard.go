//go:build !sdk

package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tfk8s/tfk8s/internal/dashboard"
)

func newDashboardCommand(o *rootOptions) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "dashboard [--address HOST:PORT] [--open]",
		Short: "Serve the web dashboard: jobs, replicas, events, live logs, suspend, resume, delete",
		Long: `Serve the tfk8s web dashboard. Locally it acts with your kubeconfig, as kubectl proxy
does, so it listens on a loopback address only and answers only connections from this
machine: open the URL it prints (or pass --open).

With --in-cluster (the dashboard's Deployment), each user signs in with a bearer token,
checked with a TokenReview and kept on the server; every call is made with that token,
so users see only what their RBAC allows. The dashboard's own credentials (its
ServiceAccount, or the kubeconfig) serve only the TokenReview. It reads a job's logs
and artifacts in S3 only at the endpoints ` + dashboard.S3EndpointsFlag + ` names.`,
		Example: "  tfk8s dashboard --open\n  tfk8s dashboard --address 127.0.0.1:9000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.serveDashboard(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&f.address, "address", dashboard.DefaultAddress, "HOST:PORT to listen on; a loopback address unless --in-cluster")
	cmd.Flags().BoolVar(&f.open, "open", false, "open the dashboard in the browser")
	cmd.Flags().BoolVar(&f.inCluster, "in-cluster", false, "ask users to sign in with a bearer token and act with it")
	cmd.Flags().StringSliceVar(&f.s3Endpoints, strings.TrimPrefix(dashboard.S3EndpointsFlag, "--"), nil,
		"an S3 endpoint (host:port) whose logs and artifacts the dashboard may read, repeatable; "+
			"default: with --in-cluster none, else any (as tfk8s logs)")
	cmd.Flags().BoolVar(&f.metricsUnauthenticated, strings.TrimPrefix(dashboard.MetricsFlag, "--"), false,
		"with --in-cluster, serve /metrics to anyone who reaches the dashboard, for a scraper that cannot sign in")
	cmd.Flags().StringSliceVar(&f.trustedProxies, strings.TrimPrefix(dashboard.TrustedProxyFlag, "--"), nil,
		"with --in-cluster, an address or CIDR of a proxy (an ingress) whose X-Forwarded-For names the client, for counting failed sign-ins; repeatable")
	return cmd
}

// serveFlags are the flags of tfk8s dashboard.
type serveFlags struct {
	address                string
	open, inCluster        bool
	s3Endpoints            []string
	metricsUnauthenticated bool
	trustedProxies         []string
}

// serveDashboard serves the dashboard on f.address until ctx ends.
func (o *rootOptions) serveDashboard(ctx context.Context, f serveFlags) error {
	return dashboard.Run(ctx, dashboard.RunOptions{
		Address: f.address, Open: f.open, OpenBrowser: openBrowser, InCluster: f.inCluster, S3Endpoints: f.s3Endpoints,
		MetricsUnauthenticated: f.metricsUnauthenticated, TrustedProxies: f.trustedProxies,
		Config:    o.restConfig,
		Namespace: o.namespace, LocalS3: o.storageConfig, Out: o.env.Out, ErrOut: o.env.ErrOut,
	})
}
