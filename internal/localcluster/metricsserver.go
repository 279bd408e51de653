package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localnode"
	"github.com/tfk8s/tfk8s/internal/pki"
)

// Local mode runs metrics-server on the host, beside the control plane, so that the
// metrics API (kubectl top, tfk8s top) answers. kube-apiserver's aggregation layer
// proxies metrics.k8s.io to it through a Service whose endpoint is the host bridge's
// address; metrics-server scrapes each kubelet's /metrics/resource, checking the
// kubelet's serving certificate against a CA this cluster keeps.

// compMetricsServer is metrics-server's binary, pid file and log.
const compMetricsServer = "metrics-server"

// metricsServerUser is metrics-server's identity, to the API server and to the
// kubelets, bound to the rules metricsServerRules grant.
const metricsServerUser = "local-cluster:metrics-server"

// metricResolution is how often metrics-server scrapes the kubelets: its minimum, so
// that a job's figures show within seconds of its start.
const metricResolution = 10 * time.Second

// kubeletRequestTimeout bounds one scrape; metrics-server wants it under 90% of
// metricResolution.
const kubeletRequestTimeout = 5 * time.Second

// metricsServerName is the Service, in kube-system, that the metrics APIService names:
// the name metrics-server's serving certificate holds.
const metricsServerName = "metrics-server"

// metricsFiles are the credentials of metrics-server and of what it talks to.
type metricsFiles struct {
	// ServingCA signs metrics-server's serving certificate, which the APIService's
	// caBundle trusts, and each kubelet's, which metrics-server checks against it.
	ServingCA controlplane.KeyPair
	// Serving is metrics-server's serving certificate.
	Serving controlplane.KeyPair
	// KubeletClient is the client certificate metrics-server presents to the kubelets,
	// signed by the CA they trust for clients (KubeletClientPKI's).
	KubeletClient controlplane.KeyPair
	// Kubeconfig reaches the API server as metricsServerUser.
	Kubeconfig string
}

// metricsFilesIn names metrics-server's credentials in dir.
func metricsFilesIn(dir string) metricsFiles {
	pair := func(name string) controlplane.KeyPair {
		return controlplane.KeyPair{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	}
	return metricsFiles{
		ServingCA:     pair("serving-ca"),
		Serving:       pair("metrics-server"),
		KubeletClient: pair("metrics-server-kubelet-client"),
		Kubeconfig:    filepath.Join(dir, "metrics-server.kubeconfig"),
	}
}

// metricsServerArgs are metrics-server's flags. It listens on the bridge, where the
// API server's aggregation layer reaches it, and reads the kubelets' ports from their
// Nodes (a test cluster's kubelet is not on 10250).
func metricsServerArgs(opts Options, f metricsFiles) []string {
	br, _ := bridgeIP(opts.PodCIDR) // checked by withDefaults
	return []string{
		"--bind-address=" + br.String(),
		"--secure-port=" + strconv.Itoa(opts.Ports.MetricsServer),
		"--tls-cert-file=" + f.Serving.Cert,
		"--tls-private-key-file=" + f.Serving.Key,
		"--kubeconfig=" + f.Kubeconfig,
		"--authentication-kubeconfig=" + f.Kubeconfig,
		"--authorization-kubeconfig=" + f.Kubeconfig,
		"--kubelet-certificate-authority=" + f.ServingCA.Cert,
		"--kubelet-client-certificate=" + f.KubeletClient.Cert,
		"--kubelet-client-key=" + f.KubeletClient.Key,
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--kubelet-request-timeout=" + kubeletRequestTimeout.String(),
		"--metric-resolution=" + metricResolution.String(),
	}
}

// ensureAggregationPKI writes, before the API server starts, the aggregation layer's
// CA and proxy certificate, which its flags name, and the serving CA the kubelets'
// certificates come from.
func ensureAggregationPKI(agg controlplane.AggregationPKI, servingCA controlplane.KeyPair) error {
	if err := agg.Ensure(certValidity); err != nil {
		return err
	}
	return servingCA.EnsureCA("tfk8s-serving-ca", certValidity)
}

// issueKubeletServing gives each node's kubelet a serving certificate for its name and
// address, from ca: the serving CA metrics-server and kube-apiserver trust.
func issueKubeletServing(ca controlplane.KeyPair, configs []localnode.Config) error {
	for _, c := range configs {
		// Before the node's first start, as Config.Save makes it.
		if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
			return fmt.Errorf("creating the state directory of node %s: %w", c.Name, err)
		}
		pair := controlplane.KeyPair{Cert: c.TLSCertFile, Key: c.TLSKeyFile}
		names := pki.Names{CommonName: "system:node:" + c.Name, DNSNames: []string{c.Name}, IPs: []net.IP{c.Address.AsSlice()}}
		if err := pair.EnsureIssued(ca, names, controlplane.ServerAuth, certValidity); err != nil {
			return fmt.Errorf("node %s: %w", c.Name, err)
		}
	}
	return nil
}

// kubeletServingFiles names a node's kubelet serving certificate and key in its state
// directory.
func kubeletServingFiles(stateDir string) (cert, key string) {
	return filepath.Join(stateDir, "kubelet-serving.crt"), filepath.Join(stateDir, "kubelet-serving.key")
}

// metricsDeps are what metrics-server's start needs of the cluster.
type metricsDeps struct {
	// cp is the control plane, whose API server's aggregation layer serves the
	// metrics API; cfg reaches it as the administrator.
	cp  *controlplane.ControlPlane
	cfg *rest.Config
	// agg is the aggregation layer's PKI, kubelet the CA the kubelets trust for
	// clients, files metrics-server's own credentials.
	agg     controlplane.AggregationPKI
	kubelet controlplane.KubeletClientPKI
	files   metricsFiles
	// restart restarts a running metrics-server: its bridge was made anew.
	restart bool
}

// startMetricsServer writes metrics-server's credentials and RBAC, starts it (again if
// its flags changed), waits until it serves, and registers it as the metrics API.
func startMetricsServer(ctx context.Context, l launcher, d metricsDeps) error {
	// An adopted kube-apiserver without the aggregation layer would route the metrics
	// API to a ClusterIP the host does not reach: up goes on without metrics-server
	// (tfk8s top reads the runs' usage records).
	lacks, err := adoptedAPIServerLacks(adoptedAPIServer(d.cp), d.agg.APIServerArgs(),
		"metrics-server not started, kubectl top fails", l.logf)
	if err != nil || lacks {
		return err
	}
	if err := writeMetricsCredentials(l.opts, d); err != nil {
		return err
	}
	c, err := client.New(d.cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	if err := ensureMetricsServerRBAC(ctx, c); err != nil {
		return err
	}
	args := metricsServerArgs(l.opts, d.files)
	p, _, err := l.ensureRunningWithArgs(compMetricsServer, args, d.restart)
	if err != nil {
		return err
	}
	br, _ := bridgeIP(l.opts.PodCIDR)
	endpoint := netip.AddrPortFrom(br, uint16(l.opts.Ports.MetricsServer))
	hc, caPEM, err := httpsClientTrusting(d.files.ServingCA.Cert, metricsServerName+"."+metricsNamespace+".svc")
	if err != nil {
		return err
	}
	// Its connections are up's alone: none is left open once up has checked.
	defer hc.CloseIdleConnections()
	err = l.waitReady(ctx, p, "metrics-server on "+endpoint.String()+" to be live", func(ctx context.Context) error {
		return httpOKWith(ctx, hc, "https://"+endpoint.String()+"/livez", "")
	})
	if err != nil {
		return err
	}
	if err := ensureMetricsAPI(ctx, c, endpoint, caPEM); err != nil {
		return err
	}
	return l.waitReady(ctx, p, "APIService "+metricsAPIService+" to be available", func(ctx context.Context) error {
		return apiServiceAvailable(ctx, c)
	})
}

// writeMetricsCredentials writes metrics-server's serving certificate, its kubelet
// client certificate, each kept while still good, and its kubeconfig.
func writeMetricsCredentials(opts Options, d metricsDeps) error {
	br, _ := bridgeIP(opts.PodCIDR)
	serving := pki.Names{
		CommonName: metricsServerName,
		DNSNames:   []string{metricsServerName + "." + metricsNamespace + ".svc"},
		IPs:        []net.IP{br.AsSlice()},
	}
	if err := d.files.Serving.EnsureIssued(d.files.ServingCA, serving, controlplane.ServerAuth, certValidity); err != nil {
		return err
	}
	kubeletCA := controlplane.KeyPair{Cert: d.kubelet.CACert, Key: d.kubelet.CAKey}
	if err := d.files.KubeletClient.EnsureIssued(kubeletCA, pki.Names{CommonName: metricsServerUser}, controlplane.ClientAuth, certValidity); err != nil {
		return err
	}
	// Written on every up, not only when missing: it holds the API server's CA and
	// address, which a cluster made anew after down changes.
	return d.cp.WriteClientKubeconfig(d.files.Kubeconfig, metricsServerUser, nil, certValidity)
}

// httpsClientTrusting is an HTTPS client that trusts the CA in caFile alone and wants
// serverName in the server's certificate; it returns the CA's PEM too.
func httpsClientTrusting(caFile, serverName string) (*http.Client, []byte, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the serving CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, nil, fmt.Errorf("no CA certificate in %s", caFile)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	return &http.Client{Transport: tr}, caPEM, nil
}
