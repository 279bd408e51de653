package localcluster

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/proc"
)

// controlPlaneCreds are the files kube-apiserver's flags name besides its own: how it
// calls the kubelets, and its aggregation layer's.
type controlPlaneCreds struct {
	// kubelet is the client certificate kube-apiserver presents to the kubelets.
	kubelet controlplane.KubeletClientPKI
	// agg is the aggregation layer's PKI, through which it proxies the metrics API.
	agg controlplane.AggregationPKI
	// kubeletCA signs each kubelet's serving certificate: the CA kube-apiserver checks
	// them against.
	kubeletCA string
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler (those not running), installs the CRDs and writes the kubeconfig.
func startControlPlane(ctx context.Context, l launcher, creds controlPlaneCreds, kubeconfig string) (*controlplane.ControlPlane, error) {
	for _, name := range controlPlaneComponents {
		if proc.FindDetached(l.run, name) == nil {
			if err := checkPorts(name, componentNamed(l.opts, name).endpoints); err != nil {
				return nil, err
			}
		}
	}
	if err := creds.kubelet.Ensure(certValidity); err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(ctx, controlPlaneOptions(l.opts, l.run, creds, l.logf))
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	for _, name := range controlPlaneComponents {
		if p := cp.Process(name); p != nil && !cp.Adopted(name) {
			l.started.Add(p)
		}
	}
	for _, name := range []string{compControllerManager, compScheduler} {
		if p := cp.Process(name); p != nil {
			l.logf("%s %s (pid %d)", name, startedOrRunning(!cp.Adopted(name)), p.Pid())
		}
	}
	if err := installKubeflowCRD(ctx, cp, l.opts, l.logf); err != nil {
		return nil, err
	}
	return cp, writeKubeconfig(kubeconfig, cp.Config)
}

// controlPlaneOptions are the control plane of a local cluster: detached, on fixed
// ports, kube-apiserver on the bridge where the nodes reach it, with gang scheduling
// and the Pod Security level every namespace gets.
func controlPlaneOptions(opts Options, run string, creds controlPlaneCreds, logf func(string, ...any)) controlplane.Options {
	root := filepath.Dir(opts.BinDir)
	return controlplane.Options{
		BinDir:                opts.BinDir,
		Dir:                   run,
		CRDDir:                existingDir(filepath.Join(root, "config", "crd", "bases")),
		PolicyDir:             existingDir(filepath.Join(root, "config", "policy")),
		Detach:                true,
		APIServerPort:         opts.Ports.APIServer,
		EtcdPort:              opts.Ports.Etcd,
		EtcdPeerPort:          opts.Ports.EtcdPeer,
		ControllerManagerPort: opts.Ports.ControllerManager,
		SchedulerPort:         opts.Ports.Scheduler,
		Scheduler:             true,
		GangScheduling:        true,
		Durable:               !opts.UnsafeNoFsync,
		PodSecurity:           PodSecurityLevel,
		Address:               apiServerAddress(opts),
		ExtraAPIServerArgs:    append(apiServerArgs(creds.kubelet), creds.agg.APIServerArgs()...),
		KubeletCA:             creds.kubeletCA,
		NoManifests:           opts.Install != "", // the install's own
		Logf:                  logf,
	}
}
