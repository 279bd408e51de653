package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// PodSecurityLevel is the Pod Security Standards level enforced on every namespace of
// a local cluster but the system ones: pods see the host's file system, so none may
// mount it (hostPath), share the host's namespaces or run privileged unless an
// administrator labels its namespace pod-security.kubernetes.io/enforce=privileged.
const PodSecurityLevel = "baseline"

// certValidity is how long the kubelet client certificate lasts: as long as the
// cluster is kept.
const certValidity = 10 * 365 * 24 * time.Hour

// Up starts the local cluster, or what is missing of it, and waits until every
// component is ready: the API server answers /readyz, the registry answers and holds
// the images of the source tree and of Options.Images, every node is Ready, DNS resolves
// the kubernetes Service, the S3 bucket exists and the controller is ready. Components
// found running are kept. It writes the kubeconfig and the S3 settings, and the user's
// ~/.tfk8s/config if there is none or it holds other keys for the cluster's endpoint. On error, the processes this call started are
// stopped again and those it found running are left alone.
func Up(ctx context.Context, opts Options) (_ *Status, err error) {
	if err := checkHost(); err != nil {
		return nil, err
	}
	if err := checkCgroups(hostCgroupMount); err != nil {
		return nil, err
	}
	if opts, err = resolve(opts); err != nil {
		return nil, err
	}
	if err := checkBinaries(opts); err != nil {
		return nil, err
	}
	if err := checkInstallSource(opts); err != nil {
		return nil, err
	}
	p := pathsIn(opts.Dir)
	for _, d := range []string{p.dir, p.run, p.s3Data, p.s3IAM} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating the state directory: %w", err)
		}
	}
	if err := saveSettings(p.clusterState, settingsOf(opts)); err != nil {
		return nil, err
	}
	u := newStarter(opts, p)
	err = proc.RunSteps(ctx, u.stopStarted,
		u.startNodeNetwork, u.ensureAggregationPKI, u.startControlPlane, u.startRegistry, u.startNodes, u.startDNS, u.startS3,
		u.startMetricsServer, u.startController, u.saveStatus)
	if err != nil {
		return nil, err
	}
	return u.status, nil
}

// starter brings up the components of one Up call.
type starter struct {
	opts  Options
	paths paths
	pki   controlplane.KubeletClientPKI
	// agg is the API server's aggregation layer's PKI; metrics, metrics-server's.
	agg     controlplane.AggregationPKI
	metrics metricsFiles
	// cfg reaches the API server as the administrator.
	cfg *rest.Config
	// cp is the control plane, which signs the nodes' client certificates.
	cp *controlplane.ControlPlane
	// s3 are the S3 server's settings.
	s3 storage.Config
	// registry is the registry's account, which the nodes pull with.
	registry registryCredential
	// procs are the components this call started, in order.
	procs proc.Group
	// networkReset says the bridge was (re)created by this call, so the components
	// listening on its address must be restarted to be sure to serve on it.
	networkReset bool
	// createdBridge says this call created the bridge itself (without a node).
	createdBridge bool
	// pushed are the digests of the images pushed into the registry, by reference.
	pushed map[string]string
	// status is the cluster's, once it is up.
	status *Status
}

// newStarter is the starter of an Up call for the cluster of opts, whose files are p.
func newStarter(opts Options, p paths) *starter {
	return &starter{opts: opts, paths: p, pki: controlplane.KubeletClientPKIIn(p.run),
		agg: controlplane.AggregationPKIIn(p.run), metrics: metricsFilesIn(p.run)}
}

// launcher is what each component's start needs of this call: where processes go,
// and the group that collects those it starts.
func (u *starter) launcher() launcher {
	return launcher{opts: u.opts, run: u.paths.run, started: &u.procs}
}

// The steps of Up, in order. Each hands its component the values it needs and keeps
// what the later steps need of it.

func (u *starter) startNodeNetwork(ctx context.Context) error {
	created, err := startNodeNetwork(ctx, u.opts, u.paths, u.launcher().logf)
	u.networkReset, u.createdBridge = created, created
	return err
}

func (u *starter) ensureAggregationPKI(context.Context) error {
	return ensureAggregationPKI(u.agg, u.metrics.ServingCA)
}

func (u *starter) startControlPlane(ctx context.Context) (err error) {
	if u.cp, err = startControlPlane(ctx, u.launcher(), u.controlPlaneCreds(), u.paths.kubeconfig); err != nil {
		return err
	}
	u.cfg = u.cp.Config
	return nil
}

// controlPlaneCreds are kube-apiserver's credentials: it checks the kubelets against
// the serving CA, which signs their serving certificates in startNodes.
func (u *starter) controlPlaneCreds() controlPlaneCreds {
	return controlPlaneCreds{kubelet: u.pki, agg: u.agg, kubeletCA: u.metrics.ServingCA.Cert}
}

func (u *starter) startRegistry(ctx context.Context) (err error) {
	u.registry, u.pushed, err = startRegistry(ctx, u.launcher(), u.paths)
	return err
}

func (u *starter) startNodes(ctx context.Context) error {
	return startNodes(ctx, u.launcher(), nodeDeps{
		cp: u.cp, cfg: u.cfg, registry: u.registry, clientCA: u.pki.CACert, servingCA: u.metrics.ServingCA,
	})
}

func (u *starter) startDNS(ctx context.Context) error {
	return startDNS(ctx, u.launcher(), u.paths.corefile, u.paths.kubeconfig, u.cfg, u.networkReset)
}

func (u *starter) startS3(ctx context.Context) (err error) {
	u.s3, err = startS3(ctx, u.launcher(), u.paths, u.networkReset)
	return err
}

func (u *starter) startMetricsServer(ctx context.Context) error {
	return startMetricsServer(ctx, u.launcher(), metricsDeps{
		cp: u.cp, cfg: u.cfg, agg: u.agg, kubelet: u.pki, files: u.metrics, restart: u.networkReset,
	})
}

func (u *starter) startController(ctx context.Context) error {
	return startController(ctx, u.launcher(), u.paths, u.cfg, u.pushed)
}

// saveStatus reads the status of the cluster, now up, and records in it what
// became of the user's config file.
func (u *starter) saveStatus(context.Context) error {
	st := statusOf(u.opts)
	if err := saveUserConfig(st, u.opts.UserConfigFile, u.s3); err != nil {
		return err
	}
	u.status = st
	return nil
}

// stopStarted stops the components this call started, in stopOrder, and deletes the
// bridge if it created it.
func (u *starter) stopStarted() {
	u.procs.StopStarted(defaultStopGrace, stopOrderOf(u.opts)...)
	if u.createdBridge {
		_ = deleteBridge(u.opts.Bridge)
		// Up's context may be over: the host's network is undone regardless.
		_ = tearDownHostNetwork(context.Background(), u.opts, u.paths)
	}
}

// checkHost refuses to run where local mode cannot: it needs Linux and root.
func checkHost() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("tfk8s local needs Linux (network namespaces, bridges, runc); this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("tfk8s local must run as root: its node creates a bridge, network namespaces, mounts and runc containers (try sudo)")
	}
	return nil
}

// checkBinaries wants every component's binary in BinDir, and what the nodes run.
func checkBinaries(opts Options) error {
	if opts.BinDir == "" {
		return errBinDirNotFound
	}
	var missing []string
	for _, c := range components(opts) {
		if _, err := os.Stat(filepath.Join(opts.BinDir, c.binary)); err != nil && !slices.Contains(missing, c.binary) {
			missing = append(missing, c.binary)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing from %s: %s (run make build tools)", opts.BinDir, strings.Join(missing, ", "))
	}
	if opts.WithoutNode {
		return nil
	}
	if err := checkDRADriverBinary(opts.BinDir, opts.DRAGPUs); err != nil {
		return err
	}
	return checkUpstreamNodeBinaries(opts.BinDir)
}

// existingDir is dir if it exists, else "" (the default).
func existingDir(dir string) string {
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}
