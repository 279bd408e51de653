package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// RunOptions are what tfk8s dashboard, and the tfk8s-dashboard binary in the
// cluster, serve the dashboard with.
type RunOptions struct {
	// Address is HOST:PORT to listen on: a loopback address unless InCluster.
	Address string
	// Open opens the dashboard in the browser with OpenBrowser.
	Open        bool
	OpenBrowser func(url string) error
	// InCluster asks users to sign in with a bearer token and acts with it.
	InCluster bool
	// S3Endpoints are the S3 endpoints whose logs and artifacts may be read; none
	// means none in the cluster and any locally.
	S3Endpoints []string
	// MetricsUnauthenticated serves /metrics in the cluster without a sign-in.
	MetricsUnauthenticated bool
	// TrustedProxies are addresses or CIDRs of the proxies (an ingress) whose
	// X-Forwarded-For names the client, for counting failed sign-ins.
	TrustedProxies []string
	// Config loads the credentials that reach the API server; Namespace the namespace
	// shown first.
	Config    func() (*rest.Config, error)
	Namespace func() (string, error)
	// LocalS3 resolves the local user's S3 settings; in the cluster none are used.
	LocalS3 func() (storage.Config, error)
	// Out gets the URL; ErrOut warnings, the audit log and server errors.
	Out, ErrOut io.Writer
}

// Run serves the dashboard on o.Address until ctx ends.
func Run(ctx context.Context, o RunOptions) error {
	if !o.InCluster && !LoopbackAddress(o.Address) {
		return fmt.Errorf("--address %s: the local dashboard acts with your kubeconfig and signs nobody in, "+
			"so it listens on a loopback address only (127.0.0.1, [::1] or localhost); "+
			"only --in-cluster, where each user signs in, may listen elsewhere", o.Address)
	}
	srv, err := newRunServer(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Address)
	if err != nil {
		return fmt.Errorf("--address %s: %w", o.Address, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(o.Out, "Dashboard: %s\n", url)
	if o.Open && o.OpenBrowser != nil {
		if err := o.OpenBrowser(url); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}
	hs := srv.HTTPServer(ctx)
	stopped := context.AfterFunc(ctx, func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	})
	defer stopped()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	return nil
}

// newRunServer makes the dashboard's server of o: its cluster dials only the S3
// endpoints allowed.
func newRunServer(o RunOptions) (*Server, error) {
	s3, err := runS3Endpoints(o)
	if err != nil {
		return nil, err
	}
	proxies, err := parseTrustedProxies(o.TrustedProxies)
	if err != nil {
		return nil, err
	}
	cfg, err := o.Config()
	if err != nil {
		return nil, err
	}
	ns, err := o.Namespace()
	if err != nil {
		return nil, err
	}
	st := jobs.Storage{Local: o.LocalS3, CheckEndpoint: s3.Check}
	if o.InCluster {
		// In-cluster, S3 is reached with the job's storage Secret only, read with the
		// user's token: never with S3 settings of the dashboard's own, which would show
		// logs to users who may not read the Secret.
		st.Local = noLocalS3
	}
	return New(Options{Config: cfg, NewCluster: NewKubeCluster(st, o.InCluster), Namespace: ns, InCluster: o.InCluster, Log: o.ErrOut,
		MetricsUnauthenticated: o.MetricsUnauthenticated, TrustedProxies: proxies})
}

// parseTrustedProxies parses each of --trusted-proxy, a CIDR or a single address.
func parseTrustedProxies(proxies []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range proxies {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			addr, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%s %q: want an address or a CIDR such as 10.0.0.0/8", TrustedProxyFlag, p)
			}
			prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		out = append(out, prefix.Masked())
	}
	return out, nil
}

// noLocalS3 resolves S3 settings from nothing: the dashboard in the cluster has none.
func noLocalS3() (storage.Config, error) {
	cfg, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, "")
	if err != nil {
		return storage.Config{}, fmt.Errorf("resolving S3 settings: %w", err)
	}
	return cfg, nil
}

// runS3Endpoints are the S3 endpoints the dashboard may reach: those of
// --allowed-s3-endpoint; without it, none in the cluster, where a user's Secret names
// the endpoint, and any locally, where the dashboard reads S3 as tfk8s logs does.
func runS3Endpoints(o RunOptions) (*S3Endpoints, error) {
	if len(o.S3Endpoints) == 0 && !o.InCluster {
		return AnyS3Endpoint(), nil
	}
	return AllowS3Endpoints(o.S3Endpoints)
}
