// Package controlplane runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager and, optionally, kube-scheduler) from the binaries that
// `make tools` builds into bin/. The integration tests start one per test package;
// local mode starts one that outlives the command.
package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tfk8s/tfk8s/internal/proc"
)

// Options configure a control plane. The zero value is a complete test control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager and kube-scheduler.
	// Default: $TFK8S_BIN, else bin/ at the root of the tfk8s source tree.
	BinDir string
	// Dir holds the control plane's state and logs. Default: a temporary directory
	// removed by Stop.
	Dir string
	// CRDDir holds CustomResourceDefinition manifests to install. Default: the tfk8s
	// CRDs under config/crd/bases.
	CRDDir string
	// PolicyDir holds more manifests (ValidatingAdmissionPolicies and their bindings)
	// created once the CRDs are established. Default: config/policy.
	PolicyDir string
	// NoManifests installs neither CRDs nor admission policies: something else
	// installs tfk8s (a local cluster's Helm or kustomize install), and must own them.
	NoManifests bool
	// APIServerPort is kube-apiserver's port; 0 picks a free one.
	APIServerPort int
	// Address is where kube-apiserver listens and what it advertises, for clients
	// outside the host's network namespace (a local cluster's nodes: the host
	// bridge's address). Default: 127.0.0.1, where only the host reaches it.
	Address string
	// Scheduler also starts kube-scheduler.
	Scheduler bool
	// GangScheduling serves Kubernetes' PodGroup API (scheduling.k8s.io/v1beta1 from
	// 1.37, v1alpha2 in 1.36) with the feature gates it needs on.
	GangScheduling bool
	// ExtraAPIServerArgs are appended to kube-apiserver's flags, such as
	// --kubelet-client-certificate for a node's kubelet API.
	ExtraAPIServerArgs []string
	// KubeletCA is the CA file kube-apiserver checks each kubelet's serving
	// certificate against when it calls the kubelet API (logs, exec, port-forward).
	// Empty, it checks none: a control plane without nodes calls no kubelet.
	KubeletCA string
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)

	// Detach starts the processes so that they outlive the caller, as local mode needs
	// (see StartDetached): Dir is then required and kept, credentials already in Dir
	// are reused, and a component whose pid file in Dir names a live process is
	// adopted rather than started again. The ports must be fixed (APIServerPort,
	// EtcdPort, EtcdPeerPort), so that a restarted component finds the others.
	Detach bool
	// EtcdPort and EtcdPeerPort are etcd's client and peer ports on 127.0.0.1;
	// ControllerManagerPort and SchedulerPort the secure ports of
	// kube-controller-manager and kube-scheduler. 0 picks a free one.
	EtcdPort, EtcdPeerPort, ControllerManagerPort, SchedulerPort int
	// Durable makes etcd fsync its writes, as a cluster kept across restarts of the
	// machine needs. Unset (tests), etcd runs with --unsafe-no-fsync: faster, and a
	// crash of the host loses what a test throws away anyway.
	Durable bool
	// PodSecurity, when set ("baseline" or "restricted"), is the Pod Security level
	// enforced on every namespace but kube-system, kube-public and kube-node-lease,
	// unless a namespace's own pod-security.kubernetes.io/enforce label says
	// otherwise. Unset, every pod is admitted (the integration tests' pods).
	PodSecurity string
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Config reaches kube-apiserver as a cluster administrator.
	Config *rest.Config
	// Dir holds the state and logs.
	Dir string
	// Version is what kube-apiserver reports of itself.
	Version *version.Info

	creds      *credentials
	kubeconfig string
	procs      proc.Group
	removeDir  bool
	detach     bool
	etcd       EtcdPKI
	logf       func(format string, args ...any)
}

// starter brings up one control plane: where its binaries and manifests are, and the
// ports its components listen on.
type starter struct {
	cp                                   *ControlPlane
	opts                                 Options
	binDir, crdDir, policyDir            string
	etcdPort, peerPort, apiPort          int
	controllerManagerPort, schedulerPort int
	gang                                 gangFlags // set when opts.GangScheduling
}

// Start starts a control plane and waits until it serves, with the CRDs installed and
// established. On error, everything it started is stopped.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if opts.Detach && (opts.Dir == "" || opts.APIServerPort == 0 || opts.EtcdPort == 0 || opts.EtcdPeerPort == 0) {
		return nil, errors.New("a detached control plane needs Dir, APIServerPort, EtcdPort and EtcdPeerPort")
	}
	s := &starter{opts: opts}
	if err := s.locate(); err != nil {
		return nil, err
	}
	if opts.GangScheduling {
		v, err := binaryVersion(ctx, s.binDir, "kube-apiserver")
		if err != nil {
			return nil, err
		}
		if s.gang, err = gangFlagsFor(v); err != nil {
			return nil, err
		}
	}
	if cp, err = newControlPlane(opts); err != nil {
		return nil, err
	}
	s.cp = cp
	undo := cp.Stop
	if cp.detach {
		undo = cp.stopStarted
	}
	err = proc.RunSteps(ctx, undo,
		s.pickPorts, s.startEtcd, s.startAPIServer, s.startControllerManager, s.startScheduler, s.installManifests)
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// locate finds the binaries, checking that those every control plane runs are there,
// and the CRDs and admission policies to install.
func (s *starter) locate() (err error) {
	if s.binDir = s.opts.BinDir; s.binDir == "" {
		if s.binDir, err = DefaultBinDir(); err != nil {
			return err
		}
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(s.binDir, name)); err != nil {
			return fmt.Errorf("control plane binary %s not found in %s (run make tools): %w", name, s.binDir, err)
		}
	}
	s.crdDir, s.policyDir = s.opts.CRDDir, s.opts.PolicyDir
	if s.crdDir != "" && s.policyDir != "" {
		return nil
	}
	root, err := sourceRoot()
	if err != nil {
		return err
	}
	s.crdDir = cmp.Or(s.crdDir, filepath.Join(root, "config", "crd", "bases"))
	s.policyDir = cmp.Or(s.policyDir, filepath.Join(root, "config", "policy"))
	return nil
}

// newControlPlane makes the control plane's directory and credentials: new ones, or
// for a detached control plane those it kept.
func newControlPlane(opts Options) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: opts.Dir, detach: opts.Detach, logf: opts.Logf}
	if cp.logf == nil {
		cp.logf = func(string, ...any) {}
	}
	var err error
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "tfk8s-controlplane-"); err != nil {
			return nil, err
		}
		cp.removeDir = true
	} else if err := os.MkdirAll(cp.Dir, 0o700); err != nil {
		return nil, err
	}
	if opts.Detach {
		if cp.creds, err = loadOrWriteCredentials(cp.Dir, opts.Address); err != nil {
			return cp, fmt.Errorf("loading credentials: %w", err)
		}
	} else if cp.creds, err = writeCredentials(cp.Dir, opts.Address); err != nil {
		return cp, fmt.Errorf("writing credentials: %w", err)
	}
	return cp, nil
}

// pickPorts takes the fixed ports given, and free ones for the rest.
func (s *starter) pickPorts(context.Context) error {
	ports, err := proc.FreePorts(5)
	if err != nil {
		return fmt.Errorf("finding free ports: %w", err)
	}
	s.etcdPort, s.peerPort = cmp.Or(s.opts.EtcdPort, ports[0]), cmp.Or(s.opts.EtcdPeerPort, ports[1])
	s.apiPort = cmp.Or(s.opts.APIServerPort, ports[2])
	s.controllerManagerPort, s.schedulerPort = cmp.Or(s.opts.ControllerManagerPort, ports[3]), cmp.Or(s.opts.SchedulerPort, ports[4])
	return nil
}

func (s *starter) startEtcd(ctx context.Context) error {
	return s.cp.startEtcd(ctx, s.binDir, s.etcdPort, s.peerPort, s.opts.Durable)
}

// startAPIServer starts kube-apiserver, waits until it is ready, and writes the
// administrator's kubeconfig the other components use.
func (s *starter) startAPIServer(ctx context.Context) error {
	cp := s.cp
	args, err := cp.apiServerArgs(s.opts, s.etcdPort, s.apiPort, s.gang)
	if err != nil {
		return err
	}
	apiserver, err := cp.start("kube-apiserver", s.binDir, args)
	if err != nil {
		return err
	}
	host := "https://" + net.JoinHostPort(apiServerAddress(s.opts), strconv.Itoa(s.apiPort))
	cp.Config = &rest.Config{
		Host:            host,
		BearerToken:     cp.creds.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.creds.caCertPEM},
		QPS:             500,
		Burst:           1000,
	}
	apiClient, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, apiserver, host+"/readyz", apiClient); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return err
	}
	if cp.Version, err = dc.ServerVersion(); err != nil {
		return fmt.Errorf("reading kube-apiserver version: %w", err)
	}
	cp.logf("kube-apiserver %s serving on %s", cp.Version.GitVersion, host)
	cp.kubeconfig, err = cp.writeKubeconfig()
	return err
}

// componentArgs are the flags kube-controller-manager and kube-scheduler share: the
// admin's kubeconfig for everything, a secure port on loopback, no leader election.
func (s *starter) componentArgs(port int) []string {
	args := []string{
		"--kubeconfig=" + s.cp.kubeconfig,
		"--authentication-kubeconfig=" + s.cp.kubeconfig,
		"--authorization-kubeconfig=" + s.cp.kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}
	if s.opts.GangScheduling {
		args = append(args, s.gang.gates)
	}
	return args
}

// startControllerManager starts kube-controller-manager: service accounts, garbage
// collection, namespace deletion.
func (s *starter) startControllerManager(context.Context) error {
	args := append(s.componentArgs(s.controllerManagerPort),
		"--service-account-private-key-file="+s.cp.creds.saKey,
		"--root-ca-file="+s.cp.creds.caCert,
		"--use-service-account-credentials=true",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--concurrent-gc-syncs=20",
	)
	_, err := s.cp.start("kube-controller-manager", s.binDir, args)
	return err
}

// startScheduler starts kube-scheduler, if asked for.
func (s *starter) startScheduler(context.Context) error {
	if !s.opts.Scheduler {
		return nil
	}
	_, err := s.cp.start("kube-scheduler", s.binDir, s.componentArgs(s.schedulerPort))
	return err
}

// installManifests installs the CRDs and the admission policies, and waits until both
// are in force.
func (s *starter) installManifests(ctx context.Context) error {
	if s.opts.NoManifests {
		return nil
	}
	if err := s.cp.installCRDs(ctx, s.crdDir); err != nil {
		return err
	}
	s.cp.logf("CRDs from %s installed", s.crdDir)
	if err := s.cp.installPolicies(ctx, s.policyDir); err != nil {
		return err
	}
	s.cp.logf("admission policies from %s in force", s.policyDir)
	return nil
}

// apiServerArgs are kube-apiserver's flags: etcd through its client certificate,
// the admin's token, service-account keys, and the Pod Security level if any.
func (cp *ControlPlane) apiServerArgs(opts Options, etcdPort, apiPort int, gang gangFlags) ([]string, error) {
	apiArgs := append(cp.etcd.apiServerArgs(etcdPort),
		"--bind-address="+apiServerAddress(opts),
		"--advertise-address="+apiServerAddress(opts),
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file="+cp.creds.servingCert,
		"--tls-private-key-file="+cp.creds.servingKey,
		"--client-ca-file="+cp.creds.caCert,
		"--token-auth-file="+cp.creds.tokenFile,
		// Node: kubelets that present a system:node:NAME certificate may touch their
		// own node's objects only, with NodeRestriction.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-account-key-file="+cp.creds.saPub,
		"--service-account-signing-key-file="+cp.creds.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range="+serviceCIDR,
		// The kubernetes Service's endpoint is the advertised address, which pods
		// can reach unless it is the host's loopback.
		"--endpoint-reconciler-type="+endpointReconciler(opts),
		"--allow-privileged=true",
		"--profiling=false",
		"--max-requests-inflight=800",
		"--max-mutating-requests-inflight=400",
	)
	if opts.PodSecurity != "" {
		file, err := writePodSecurityConfig(cp.Dir, opts.PodSecurity)
		if err != nil {
			return nil, err
		}
		apiArgs = append(apiArgs, "--admission-control-config-file="+file)
	}
	if opts.GangScheduling {
		apiArgs = append(apiArgs, gang.runtimeConfig, gang.gates)
	}
	apiArgs = append(apiArgs, KubeletCAArgs(opts)...)
	return append(apiArgs, opts.ExtraAPIServerArgs...), nil
}

// apiServerAddress is where kube-apiserver listens: Options.Address, else 127.0.0.1.
func apiServerAddress(opts Options) string { return cmp.Or(opts.Address, "127.0.0.1") }

// endpointReconciler keeps the kubernetes Service's endpoint when pods can reach the
// API server's address; a loopback address is no endpoint at all.
func endpointReconciler(opts Options) string {
	if opts.Address == "" {
		return "none"
	}
	return "lease"
}

// Kubeconfig is the path of a kubeconfig file for the cluster administrator.
func (cp *ControlPlane) Kubeconfig() string { return cp.kubeconfig }

// Stop stops every process, newest first, and removes the state directory if Start
// created it. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	cp.procs.Stop(stopGrace)
	if cp.removeDir {
		_ = os.RemoveAll(cp.Dir)
	}
}

func (cp *ControlPlane) writeKubeconfig() (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["tfk8s"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.creds.caCertPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cp.creds.adminToken}
	cfg.Contexts["tfk8s"] = &clientcmdapi.Context{Cluster: "tfk8s", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "tfk8s"
	path := filepath.Join(cp.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig: %w", err)
	}
	return path, nil
}

// waitHTTP polls url until it answers 200, the process exits, or a minute passes.
func waitHTTP(ctx context.Context, p *proc.Process, url string, httpClient *http.Client) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, p.ExitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			lastErr = err
			return false, nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("%s answered %s", url, resp.Status)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil && !p.Exited() {
			err = fmt.Errorf("%w (last: %v); last lines of %s:\n%s", err, lastErr, p.LogPath(), p.LogTail(20))
		}
		return fmt.Errorf("waiting for %s: %w", p.Name(), err)
	}
	return nil
}

// DefaultBinDir is where tfk8s finds the binaries it runs, the one lookup of the whole
// tree: $TFK8S_BIN, else the running executable's directory if it holds etcd (the
// tfk8s command in bin/), else bin/ at the root of the tfk8s source tree.
func DefaultBinDir() (string, error) {
	if dir := os.Getenv("TFK8S_BIN"); dir != "" {
		return dir, nil
	}
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
			return dir, nil
		}
	}
	root, err := sourceRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// sourceRoot walks up from the working directory to the tfk8s go.mod.
// SourceRoot is the tfk8s source tree the working directory is in, where the control
// plane finds config/ when it is given no CRD or policy directory.
func SourceRoot() (string, error) { return sourceRoot() }

func sourceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/tfk8s/tfk8s\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the tfk8s source tree: set TFK8S_BIN")
		}
		dir = parent
	}
}
