package localnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
	"github.com/tfk8s/tfk8s/internal/localnode/provisioner"
	"github.com/tfk8s/tfk8s/internal/proc"
	"github.com/tfk8s/tfk8s/internal/safewrite"
)

// Timeouts of the inner half.
const (
	// socketTimeout bounds the wait for containerd's socket.
	socketTimeout = time.Minute
	// programStopGrace is how long each program has after SIGTERM.
	programStopGrace = 15 * time.Second
)

// RunInner is the node's inner half, in its own namespaces. It waits until the outer
// half has connected its network (a byte on release), lays out its mounts and
// configuration, and runs containerd, the kubelet, kube-proxy and (with DRAGPUs) the
// DRA driver until ctx ends or one of them exits. Then it stops them, newest first,
// and kills what runs in the pods' cgroups, so that the outer half finds only the
// shims left.
func RunInner(ctx context.Context, c Config, release *os.File) error {
	if _, err := release.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("waiting for the node's network: %w", err)
	}
	release.Close()
	if err := unix.Sethostname([]byte(c.Name)); err != nil {
		return fmt.Errorf("setting the node's hostname: %w", err)
	}
	if err := setUpMounts(c); err != nil {
		return err
	}
	if err := setForwarding(); err != nil {
		return err
	}
	if err := applyFirewall(ctx, c); err != nil {
		return err
	}
	if err := writeConfigs(c); err != nil {
		return err
	}
	var running []*proc.Process
	defer func() { stopPrograms(c, running) }()
	p := pathsOf(c)
	containerd, err := startProgram(c, "containerd", "--config", p.containerdConfig)
	if err != nil {
		return err
	}
	running = append(running, containerd)
	if err := waitForSocket(ctx, containerd, p.containerdSocket); err != nil {
		return err
	}
	if err := linkContainerdSocket(p.containerdSocket, cadvisorContainerdSocket); err != nil {
		return err
	}
	starts := []struct {
		name string
		args []string
	}{
		{"kubelet", kubeletArgs(c)},
		{"kube-proxy", []string{"--config=" + p.proxyConfig}},
	}
	if c.DRAGPUs > 0 {
		if err := makeDRADriverDirs(); err != nil {
			return err
		}
		starts = append(starts, struct {
			name string
			args []string
		}{DRADriverBinary, draDriverArgs(c)})
	}
	for _, start := range starts {
		prog, err := startProgram(c, start.name, start.args...)
		if err != nil {
			return err
		}
		running = append(running, prog)
	}
	return runUntilStopped(ctx, c, running)
}

// runUntilStopped serves the node's fake GPUs to its kubelet and provisions the
// claims scheduled to it while the programs run, and returns when ctx ends or a
// program exits.
func runUntilStopped(ctx context.Context, c Config, running []*proc.Process) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.ProvisionerKubeconfig)
	if err != nil {
		return fmt.Errorf("reading the node's kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the node's API client: %w", err)
	}
	// New first, before any other use of client-go in this process (its doc).
	volumes, err := provisioner.New(ctx, cs, c.Name, pathsOf(c).volumes)
	if err != nil {
		return err
	}
	plugin := &gpus.Plugin{Count: c.GPUs, Devices: c.RealGPUs, PluginDir: filepath.Join(kubeletRootDir, "device-plugins")}
	var wg sync.WaitGroup
	var pluginErr error
	wg.Go(func() { pluginErr = plugin.Run(ctx) })
	wg.Go(func() { volumes.Run(ctx) })
	err = proc.WaitAny(ctx, running)
	cancel()
	wg.Wait()
	return errors.Join(err, pluginErr)
}

// writeConfigs writes each program's configuration into the state directory.
func writeConfigs(c Config) error {
	p := pathsOf(c)
	containerd, err := renderContainerdConfig(c)
	if err != nil {
		return err
	}
	cni, err := renderCNIConfig(c)
	if err != nil {
		return err
	}
	kubelet, err := renderKubeletConfig(c)
	if err != nil {
		return err
	}
	proxy, err := renderProxyConfig(c)
	if err != nil {
		return err
	}
	// hosts.toml holds the registry's account: containerd's, root's, alone.
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{p.containerdConfig, containerd, 0o644},
		{filepath.Join(p.certsDir, "_default", "hosts.toml"), renderMirrorHosts(c.RegistryMirror, c.RegistryAuthorization), 0o600},
		{filepath.Join(p.cniConfDir, "10-tfk8s.conflist"), cni, 0o644},
		{p.kubeletConfig, kubelet, 0o644},
		{p.proxyConfig, proxy, 0o644},
		{p.resolvConf, renderResolvConf(c.Resolvers), 0o644},
	}
	if err := forgetPreparedClaims(p); err != nil {
		return err
	}
	// containerd watches the CDI directory from its start; the DRA driver fills it.
	if err := os.MkdirAll(p.cdiDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", p.cdiDir, err)
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(f.path), err)
		}
		if err := safewrite.File(f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}

// startProgram starts bin/name with args, its output appended to name.log in the
// state directory. It dies with the inner half (proc.Start's Pdeathsig).
func startProgram(c Config, name string, args ...string) (*proc.Process, error) {
	return proc.Start(name, filepath.Join(c.BinDir, name), args, c.StateDir, proc.Options{
		Env:    []string{"PATH=" + c.BinDir + ":/usr/sbin:/usr/bin:/sbin:/bin"},
		Append: true,
	})
}

// waitForSocket waits until the program listens on the unix socket.
func waitForSocket(ctx context.Context, p *proc.Process, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, socketTimeout)
	defer cancel()
	for {
		if conn, err := net.Dial("unix", socket); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited before it listened on %s: %v", p.Name(), socket, p.Err())
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to listen on %s: %w", p.Name(), socket, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopPrograms stops the programs newest first (the DRA driver if any, kube-proxy,
// the kubelet, then containerd). Once the kubelet is gone, so that it starts nothing again, the pods'
// containers are stopped within their grace periods and whatever is left in the pods'
// cgroups is killed.
func stopPrograms(c Config, programs []*proc.Process) {
	for _, p := range slices.Backward(programs) {
		if p.Name() == "containerd" {
			if err := stopContainers(pathsOf(c).containerdSocket); err != nil {
				fmt.Fprintf(os.Stderr, "stopping the pods of node %s: %v\n", c.Name, err)
			}
			killPods(c)
		}
		_ = p.Stop(programStopGrace)
	}
}

// killPods SIGKILLs every process in the pods' cgroups.
func killPods(c Config) {
	hierarchies, err := cgroupHierarchies(cgroupMount)
	if err != nil {
		return
	}
	err = killCgroups(hierarchies, path.Join(c.CgroupRoot, "kubepods"), os.Getpid(), killTimeout)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "killing the pods of node %s: %v\n", c.Name, err)
	}
}
