package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// sandbox is what a pod's containers share: the network namespace and IP, the files
// bind-mounted over /etc, the volumes and the GPUs.
type sandbox struct {
	ready     bool
	podIP     string
	netnsPath string // "" for a host-network pod
	hosts     string
	resolv    string
	hostname  string
	volumes   map[string]string
	gpus      map[string][]int
}

// fileMounts bind-mounts the pod's /etc/hosts, /etc/resolv.conf and /etc/hostname.
func (sb sandbox) fileMounts() []specs.Mount {
	var mounts []specs.Mount
	for _, f := range []struct{ dest, src string }{
		{"/etc/hosts", sb.hosts}, {"/etc/resolv.conf", sb.resolv}, {"/etc/hostname", sb.hostname},
	} {
		if f.src != "" {
			mounts = append(mounts, specs.Mount{Destination: f.dest, Type: "bind", Source: f.src, Options: []string{"bind", "ro"}})
		}
	}
	return mounts
}

// createSandbox gives the pod its network namespace and IP (or the host's network),
// writes its hosts, resolv.conf and hostname files and prepares its volumes.
func (w *podWorker) createSandbox(ctx context.Context) error {
	pod := w.currentPod()
	m := w.m
	uid := string(w.uid)
	dir := w.podDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating pod directory: %w", err)
	}
	w.mu.Lock()
	if w.sb == nil {
		w.sb = &sandbox{}
	}
	sb := *w.sb
	w.mu.Unlock()

	if pod.Spec.HostNetwork {
		sb.podIP, sb.netnsPath = m.opts.NodeIP, ""
	} else {
		ip, err := m.ipam.allocate(uid)
		if err != nil {
			return err
		}
		path, err := m.net.addPod(uid, ip)
		if err != nil {
			return err
		}
		sb.podIP, sb.netnsPath = ip.String(), path
	}
	w.mu.Lock()
	w.sb.podIP, w.sb.netnsPath = sb.podIP, sb.netnsPath
	w.mu.Unlock()

	sb.hosts = filepath.Join(dir, "hosts")
	sb.resolv = filepath.Join(dir, "resolv.conf")
	sb.hostname = filepath.Join(dir, "hostname")
	files := map[string][]byte{
		sb.hosts:    renderHosts(pod, sb.podIP, m.opts.ClusterDomain, m.host.hosts),
		sb.resolv:   podResolvConf(pod, m.opts.ClusterDNS, m.opts.ClusterDomain, m.host.resolv).render(),
		sb.hostname: []byte(utsHostname(pod, m.opts.ClusterDomain) + "\n"),
	}
	if pod.Spec.HostNetwork {
		sb.hostname = ""
		delete(files, filepath.Join(dir, "hostname"))
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
		}
	}
	volumes, err := prepareVolumes(w.api(), pod, w.fields(), filepath.Join(dir, "volumes"))
	if err != nil {
		return err
	}
	sb.volumes = volumes
	sb.ready = true
	w.mu.Lock()
	*w.sb = sb
	w.mu.Unlock()
	w.notify()
	return nil
}

// sandboxInfo is a copy of the sandbox, zero before it exists.
func (w *podWorker) sandboxInfo() sandbox {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sb == nil {
		return sandbox{}
	}
	return *w.sb
}

// fields are the node-side values the downward API reads.
func (w *podWorker) fields() podFields {
	sb := w.sandboxInfo()
	f := podFields{HostIPs: []string{w.m.opts.NodeIP}, NodeAllocatable: w.m.allocatable}
	if sb.podIP != "" {
		f.PodIPs = []string{sb.podIP}
	}
	return f
}

// podIPForChecks is the address probes and HTTP hooks reach the pod at.
func (w *podWorker) podIPForChecks() string { return w.sandboxInfo().podIP }
