package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

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
	o := controlPlaneOptions(l.opts, l.run, creds, l.logf)
	cp, err := controlplane.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	for _, name := range controlPlaneComponents {
		if p := cp.Process(name); p != nil && !cp.Adopted(name) {
			l.started.Add(p)
		}
	}
	// The check only advises: a flag that cannot be read is said, and up goes on.
	if _, err := adoptedAPIServerLacks(adoptedAPIServer(cp), controlplane.KubeletCAArgs(o),
		"it forwards logs, exec and port-forward to kubelets whose certificates it does not check", l.logf); err != nil {
		l.logf("the running kube-apiserver's flags could not be read: %v", err)
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

// adoptedAPIServer is the control plane's kube-apiserver if Start found it running
// rather than started it, nil otherwise.
func adoptedAPIServer(cp *controlplane.ControlPlane) *proc.Process {
	if !cp.Adopted(compAPIServer) {
		return nil
	}
	return cp.Process(compAPIServer)
}

// adoptedAPIServerLacks reports whether apiServer, a kube-apiserver found running (nil
// if up started it), runs without one of flags: started by an older tfk8s, it keeps
// its flags until local down stops it. If so it logs the flag, what the cluster goes
// without meanwhile (without), and how to restart it.
func adoptedAPIServerLacks(apiServer *proc.Process, flags []string, without string, logf func(string, ...any)) (bool, error) {
	if apiServer == nil {
		return false, nil
	}
	flag, err := apiServerFlagMissing(apiServer.Pid(), flags)
	if err != nil || flag == "" {
		return false, err
	}
	logf("kube-apiserver (pid %d), started by an older tfk8s, runs without %s: %s; "+
		"tfk8s local down, then tfk8s local up, restarts it with it", apiServer.Pid(), flag, without)
	return true, nil
}

// apiServerFlagMissing is the first of flags that the process pid runs without, or ""
// when it has them all.
func apiServerFlagMissing(pid int, flags []string) (string, error) {
	args, err := processArgs(pid)
	if err != nil {
		return "", err
	}
	for _, flag := range flags {
		if !slices.Contains(args, flag) {
			return flag, nil
		}
	}
	return "", nil
}
