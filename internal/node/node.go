package node

import (
	"context"
	"errors"
	"fmt"
	"github.com/go-logr/logr"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// finalCallTimeout bounds the API calls made while stopping, after the node's context
// has ended.
const finalCallTimeout = 10 * time.Second

// Run runs the node until ctx ends: it registers the Node, keeps its Lease and status,
// runs the pods bound to it and serves the kubelet API. When ctx ends it stops every
// pod, marks the Node NotReady and removes its network, mounts and containers. Run
// needs root and runc.
func Run(ctx context.Context, opts Options) (err error) {
	if opts, err = preflight(opts); err != nil {
		return err
	}
	log := opts.Log.WithValues("node", opts.NodeName)
	client, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	cidr, err := parsePodCIDR(opts.PodCIDR)
	if err != nil {
		return err
	}
	mctx, mcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer mcancel()
	m, info, err := newManager(mctx, opts, client, cidr, log)
	if err != nil {
		return err
	}
	defer m.events.Shutdown()

	// Everything set up from here is removed on the way out, whatever happens.
	defer func() {
		if cerr := Cleanup(opts); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", cerr))
		}
	}()
	if err := m.net.setUp(); err != nil {
		return err
	}
	relay, err := m.startAPIService(ctx, log)
	if err != nil {
		return err
	}
	defer relay.close()
	if err := mountTmpfs(m.layersDir(), "mode=0700"); err != nil {
		return err
	}
	server, err := listenKubeletAPI(m)
	if err != nil {
		return err
	}
	go server.serve()
	defer server.shutdown()

	node, err := registerNode(ctx, client, opts, cidr.String(), info)
	if err != nil {
		return err
	}
	log.Info("Node registered", "podCIDR", cidr.String(), "nodeIP", opts.NodeIP, "gpus", opts.GPUs)
	leaseCtx, stopLease := context.WithCancel(mctx)
	leaseDone := m.heartbeat(leaseCtx, node, info)

	// Once registered, the node leaves the same way whatever ends it: pods stopped,
	// lease and status no longer renewed, the Node NotReady.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer func() {
		log.Info("Stopping: terminating pods")
		stopWatching()
		m.shutdown()
		stopLease()
		<-leaseDone
		fctx, cancel := context.WithTimeout(mctx, finalCallTimeout)
		defer cancel()
		if err := updateNodeStatus(fctx, client, opts, info, false, "tfk8s-node stopped"); err != nil {
			log.Error(err, "Marking the node NotReady")
		}
		log.Info("Stopped")
	}()
	if opts.LocalProvisioner {
		p := &provisioner{client: client, nodeName: opts.NodeName, dir: filepath.Join(opts.StateDir, "pv"), log: log.WithName("provisioner")}
		if err := p.start(watchCtx); err != nil {
			return stoppedOr(ctx, err)
		}
	}
	if err := m.watch(watchCtx); err != nil {
		return stoppedOr(ctx, err)
	}
	m.removeStaleLogs()
	log.Info("Running pods")
	<-ctx.Done()
	return nil
}

// preflight defaults opts and checks what the node cannot run without: root and runc.
func preflight(opts Options) (Options, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return opts, err
	}
	if os.Geteuid() != 0 {
		return opts, errors.New("tfk8s-node must run as root: it creates network namespaces, mounts and containers")
	}
	if opts.RuncPath, err = exec.LookPath(opts.RuncPath); err != nil {
		return opts, fmt.Errorf("finding runc (install it: apt-get install -y runc): %w", err)
	}
	return opts, nil
}

// startAPIService finds the kubernetes Service and serves it on the node's bridge, so
// that pods reach the API server as on any cluster.
func (m *manager) startAPIService(ctx context.Context, log logr.Logger) (*apiRelay, error) {
	var err error
	if m.apiService, err = lookupAPIService(ctx, m.client, m.opts.Config.Host); err != nil {
		return nil, err
	}
	return serveAPIService(m.opts.Bridge, m.apiService, log)
}

// heartbeat renews the node's lease and status until ctx ends; the channel closes
// once the lease is no longer renewed.
func (m *manager) heartbeat(ctx context.Context, node *corev1.Node, info hostInfo) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		every(ctx, m.opts.LeaseRenewInterval, func(ctx context.Context) error {
			return renewLease(ctx, m.client, node, m.opts.LeaseDuration)
		}, func(err error) { m.log.Error(err, "Renewing the node lease") })
	}()
	go every(ctx, m.opts.StatusInterval, func(ctx context.Context) error {
		return updateNodeStatus(ctx, m.client, m.opts, info, true, "")
	}, func(err error) { m.log.Error(err, "Updating the node status") })
	return done
}

// newManager prepares the node's state directory, after removing whatever an earlier
// run left behind, and returns the manager of its pods, with what the host offers.
func newManager(ctx context.Context, opts Options, client kubernetes.Interface, cidr podCIDR, log logr.Logger) (*manager, hostInfo, error) {
	if err := Cleanup(opts); err != nil {
		return nil, hostInfo{}, fmt.Errorf("cleaning up an earlier run: %w", err)
	}
	for _, d := range []string{"pods", "logs", "pv", "runc"} {
		if err := os.MkdirAll(filepath.Join(opts.StateDir, d), 0o700); err != nil {
			return nil, hostInfo{}, fmt.Errorf("creating the state directory: %w", err)
		}
	}
	info, err := readHostInfo(opts.StateDir, opts.RuncPath)
	if err != nil {
		return nil, hostInfo{}, err
	}
	ipam, err := newIPAM(cidr, filepath.Join(opts.StateDir, "ipam"))
	if err != nil {
		return nil, hostInfo{}, err
	}
	images, err := newImageStore(opts.ImageDir, opts.RegistryMirrors)
	if err != nil {
		return nil, hostInfo{}, err
	}
	hostsFile, _ := os.ReadFile("/etc/hosts")
	resolvFile, _ := os.ReadFile("/etc/resolv.conf")
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return &manager{
		opts:        opts,
		client:      client,
		log:         log,
		events:      broadcaster,
		recorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "tfk8s-node", Host: opts.NodeName}),
		runc:        runc{bin: opts.RuncPath, root: filepath.Join(opts.StateDir, "runc")},
		net:         network{bridge: opts.Bridge, cidr: cidr, forward: opts.IPForward},
		ipam:        ipam,
		gpus:        newGPUAllocator(opts.GPUs),
		cgroups:     detectCgroups("/sys/fs/cgroup"),
		host:        hostFiles{hosts: hostsFile, resolv: parseResolvConf(resolvFile)},
		images:      images,
		allocatable: nodeCapacity(info, opts.GPUs),
		ctx:         ctx,
		workers:     map[types.UID]*podWorker{},
	}, info, nil
}

// stoppedOr returns nil if ctx has ended (the node was asked to stop while starting),
// else err.
func stoppedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
