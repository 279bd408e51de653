package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	u := &starter{opts: opts, paths: p, pki: controlplane.KubeletClientPKIIn(p.run),
		agg: controlplane.AggregationPKIIn(p.run), metrics: metricsFilesIn(p.run)}
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

// logf reports progress.
func (u *starter) logf(format string, args ...any) {
	fmt.Fprintf(u.opts.Progress, format+"\n", args...)
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (those not running), installs the CRDs and writes the kubeconfig.
func (u *starter) startControlPlane(ctx context.Context) error {
	for _, name := range controlPlaneComponents {
		if proc.FindDetached(u.paths.run, name) == nil {
			if err := checkPorts(name, componentNamed(u.opts, name).endpoints); err != nil {
				return err
			}
		}
	}
	if err := u.pki.Ensure(certValidity); err != nil {
		return err
	}
	root := filepath.Dir(u.opts.BinDir)
	cp, err := controlplane.Start(ctx, controlplane.Options{
		BinDir:                u.opts.BinDir,
		Dir:                   u.paths.run,
		CRDDir:                existingDir(filepath.Join(root, "config", "crd", "bases")),
		PolicyDir:             existingDir(filepath.Join(root, "config", "policy")),
		Detach:                true,
		APIServerPort:         u.opts.Ports.APIServer,
		EtcdPort:              u.opts.Ports.Etcd,
		EtcdPeerPort:          u.opts.Ports.EtcdPeer,
		ControllerManagerPort: u.opts.Ports.ControllerManager,
		SchedulerPort:         u.opts.Ports.Scheduler,
		Scheduler:             true,
		GangScheduling:        true,
		Durable:               !u.opts.UnsafeNoFsync,
		PodSecurity:           PodSecurityLevel,
		Address:               apiServerAddress(u.opts),
		ExtraAPIServerArgs:    append(apiServerArgs(u.pki), u.agg.APIServerArgs()...),
		NoManifests:           u.opts.Install != "", // the install's own
		Logf:                  u.logf,
	})
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	for _, name := range controlPlaneComponents {
		if p := cp.Process(name); p != nil && !cp.Adopted(name) {
			u.procs.Add(p)
		}
	}
	for _, name := range []string{compControllerManager, compScheduler} {
		if p := cp.Process(name); p != nil {
			u.logf("%s %s (pid %d)", name, startedOrRunning(!cp.Adopted(name)), p.Pid())
		}
	}
	if err := u.installKubeflowCRD(ctx, cp); err != nil {
		return err
	}
	u.cfg, u.cp = cp.Config, cp
	return writeKubeconfig(u.paths.kubeconfig, cp.Config)
}

// startNodes starts every node's tfk8s-nodeinit and waits until each Node is Ready;
// without a node, it starts none. The pod networks must not overlap what the host
// routes elsewhere.
func (u *starter) startNodes(ctx context.Context) error {
	if u.opts.WithoutNode {
		return nil
	}
	nodes := clusterNodes(u.opts)
	routes, err := hostRoutes()
	if err != nil {
		return err
	}
	if err := checkPodCIDRsFree(nodes, routes); err != nil {
		return err
	}
	c, err := client.New(u.cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	return u.startUpstreamNodes(ctx, c, nodes)
}

// startDNS starts CoreDNS on the bridge and waits until it resolves the kubernetes
// Service.
func (u *starter) startDNS(ctx context.Context) error {
	corefile, err := renderCorefile(u.opts, u.paths.kubeconfig)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(u.paths.corefile, corefile, 0o644); err != nil {
		return err
	}
	p, _, err := u.ensureRunning(compDNS, []string{"-conf", u.paths.corefile}, nil, u.networkReset)
	if err != nil {
		return err
	}
	br, _ := bridgeIP(u.opts.PodCIDR)
	server := netip.AddrPortFrom(br, uint16(u.opts.Ports.DNS)).String()
	name := "kubernetes.default.svc." + u.opts.ClusterDomain + "."
	err = u.waitReady(ctx, p, "DNS on "+server+" to resolve "+name, func(ctx context.Context) error {
		_, err := LookupHost(ctx, server, name)
		return err
	})
	if err != nil {
		return err
	}
	c, err := client.New(u.cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	return ensureDNSService(ctx, c, br, u.opts.Ports.DNS)
}

// LookupHost resolves name through the DNS server at server (host:port) alone.
func LookupHost(ctx context.Context, server, name string) ([]string, error) {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
	return r.LookupHost(ctx, name)
}

// startS3 starts versitygw on the bridge and creates the bucket.
func (u *starter) startS3(ctx context.Context) error {
	br, _ := bridgeIP(u.opts.PodCIDR)
	endpoint := netip.AddrPortFrom(br, uint16(u.opts.Ports.S3)).String()
	cfg, err := loadOrCreateS3Config(u.paths.s3Config, endpoint)
	if err != nil {
		return err
	}
	data, err := encodeS3Config(cfg)
	if err != nil {
		return err
	}
	// Saved before versitygw starts, so that a later Up finds its credentials.
	if err := writeFileAtomic(u.paths.s3Config, data, 0o600); err != nil {
		return err
	}
	u.s3 = cfg
	env := []string{"ROOT_ACCESS_KEY_ID=" + cfg.AccessKeyID, "ROOT_SECRET_ACCESS_KEY=" + cfg.SecretAccessKey}
	p, _, err := u.ensureRunning(compS3, s3Args(u.opts, u.paths), env, u.networkReset)
	if err != nil {
		return err
	}
	mc, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		Region:     cfg.Region,
		MaxRetries: 1,
	})
	if err != nil {
		return fmt.Errorf("creating the S3 client: %w", err)
	}
	return u.waitReady(ctx, p, "S3 on "+endpoint+" to serve bucket "+cfg.Bucket, func(ctx context.Context) error {
		ok, err := mc.BucketExists(ctx, cfg.Bucket)
		if err != nil || ok {
			return err
		}
		return mc.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region})
	})
}

// startController starts tfk8s-controller and waits until it is ready, or installs
// it into the cluster with Options.Install.
func (u *starter) startController(ctx context.Context) error {
	if u.opts.Install != "" {
		return u.installController(ctx)
	}
	args := append(controllerArgs(u.opts, u.paths), pinnedImageArgs(u.pushed)...)
	restart := false
	if running := proc.FindDetached(u.paths.run, compController); running != nil {
		same, err := runsWithArgs(running.Pid(), args)
		if err != nil {
			return err
		}
		restart = !same
	}
	p, _, err := u.ensureRunning(compController, args, nil, restart)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", u.opts.Ports.ControllerHealth)
	return u.waitReady(ctx, p, "tfk8s-controller to be ready", func(ctx context.Context) error {
		return httpOK(ctx, url)
	})
}

// saveStatus reads the status of the cluster, now up, and records in it what
// became of the user's config file.
func (u *starter) saveStatus(context.Context) error {
	st := statusOf(u.opts)
	if err := u.saveUserConfig(st); err != nil {
		return err
	}
	u.status = st
	return nil
}

// ensureRunning adopts the component if it runs, unless restart asks to restart it;
// else it checks the component's ports and starts it. It reports whether it started it.
func (u *starter) ensureRunning(name string, args, env []string, restart bool) (*proc.Process, bool, error) {
	p := proc.FindDetached(u.paths.run, name)
	if p != nil && !restart {
		u.logf("%s running (pid %d)", name, p.Pid())
		return p, false, nil
	}
	if p != nil {
		u.logf("restarting %s: its bridge or its settings changed", name)
		if err := p.Stop(defaultStopGrace(name)); err != nil {
			return nil, false, err
		}
	}
	if err := checkPorts(name, componentNamed(u.opts, name).endpoints); err != nil {
		return nil, false, err
	}
	bin := filepath.Join(u.opts.BinDir, componentNamed(u.opts, name).binary)
	p, err := proc.StartDetached(name, bin, args, env, u.paths.run)
	if err != nil {
		return nil, false, err
	}
	u.procs.Add(p)
	u.logf("%s started (pid %d), log %s", name, p.Pid(), p.LogPath())
	return p, true, nil
}

// waitReady polls check until it succeeds, the process exits, or the timeout passes.
func (u *starter) waitReady(ctx context.Context, p *proc.Process, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.Timeout)
	defer cancel()
	for {
		if p.Exited() {
			return fmt.Errorf("waiting for %s: %w", what, p.ExitError())
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		err := check(cctx)
		ccancel()
		if err == nil {
			u.logf("%s: ready", what)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v); last lines of %s:\n%s",
				what, ctx.Err(), err, p.LogPath(), p.LogTail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
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

// startedOrRunning says, for progress messages, whether a component was started.
func startedOrRunning(started bool) string {
	if started {
		return "started"
	}
	return "running"
}

// nodeReady reports whether the node's Ready condition is True and was last reported
// at or after since: a Node left Ready by an earlier run does not count.
func nodeReady(node *corev1.Node, since time.Time) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue && !c.LastHeartbeatTime.Time.Before(since)
		}
	}
	return false
}

// httpOK gets url and wants 200 OK.
func httpOK(ctx context.Context, url string) error { return httpOKAs(ctx, url, "") }

// httpOKAs gets url with authorization as its Authorization header (none if empty)
// and wants 200 OK.
func httpOKAs(ctx context.Context, url, authorization string) error {
	return httpOKWith(ctx, http.DefaultClient, url, authorization)
}

// httpOKWith is httpOKAs through hc.
func httpOKWith(ctx context.Context, hc *http.Client, url, authorization string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{url: url, status: resp.Status, code: resp.StatusCode}
	}
	return nil
}

// statusError is an HTTP answer other than 200 OK.
type statusError struct {
	url, status string
	code        int
}

func (e *statusError) Error() string { return e.url + " answered " + e.status }

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
