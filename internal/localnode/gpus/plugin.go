// Package gpus advertises NVIDIA GPUs to the kubelet through its device-plugin API:
// fake ones, so that tests and local mode run GPU jobs on machines without GPUs, and
// the upstream kubelet schedules and allocates them as it would real ones; or the
// host's real ones, enumerated through NVML, on a GPU machine (make test-gpu).
package gpus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// SocketName is the file name of the plugin's socket in the kubelet's device-plugin
// directory. The kubelet dials it by this name, the endpoint of the registration.
const SocketName = "tfk8s-gpus.sock"

// registerTimeout bounds a registration, retries of the connection included: the
// kubelet creates its socket a moment before it accepts on it.
const registerTimeout = 10 * time.Second

// Plugin advertises Count fake nvidia.com/gpu devices to the kubelet of one node, or
// the host's real GPUs in Devices. It stands in for NVIDIA's device plugin: fake
// GPUs let GPU jobs schedule in tests and in local mode where there are none; real
// ones, enumerated through NVML (RealDevices), run them on a GPU machine.
type Plugin struct {
	// Count is how many fake GPUs the node advertises; 0 advertises none.
	Count int
	// Devices are real GPUs to advertise instead; each container gets its own device
	// nodes and the host's driver libraries.
	Devices []Device
	// LibDirs are where the host's driver libraries are looked for, for Devices;
	// the distributions' directories if empty.
	LibDirs []string
	// DevDir is where the host's device nodes are, "/dev" if empty; tests give a
	// directory of their own.
	DevDir string
	// PluginDir is the kubelet's device-plugin directory, v1beta1.DevicePluginPath if
	// empty: the kubelet's registration socket is there and the plugin's goes there.
	PluginDir string
}

// Run advertises the devices until ctx ends, then removes its socket and returns nil;
// with neither Count nor Devices it returns at once, and it fails only if it cannot serve or watch.
// The kubelet deletes every plugin's socket and forgets its plugins when it starts, so
// Run serves and registers anew, or after a failed registration tries again, each time
// the kubelet's socket is created.
func (p *Plugin) Run(ctx context.Context) error {
	if p.Count == 0 && len(p.Devices) == 0 {
		return nil
	}
	p = p.withDefaults()
	svc := &service{devices: fakeDevices(p.Count), devDir: p.DevDir}
	if len(p.Devices) > 0 {
		svc.devices, svc.libDirs = realDevices(p.Devices), p.LibDirs
	}
	log := klog.FromContext(ctx).WithValues("resource", tfjob.GPUResource, "count", len(svc.devices), "real", len(p.Devices) > 0)
	svc.log = log
	if err := os.MkdirAll(p.PluginDir, 0o750); err != nil {
		return fmt.Errorf("creating the device-plugin directory: %w", err)
	}
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the device-plugin directory: %w", err)
	}
	defer watcher.Close()
	if err := watcher.Add(p.PluginDir); err != nil {
		return fmt.Errorf("watching the device-plugin directory: %w", err)
	}
	for {
		err := p.serveUntilKubeletRestarts(ctx, watcher, svc, log)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		log.Info("The kubelet started; serving and registering anew")
	}
}

// withDefaults returns a copy of p with the empty directories defaulted.
func (p *Plugin) withDefaults() *Plugin {
	c := *p
	if c.DevDir == "" {
		c.DevDir = "/dev"
	}
	if c.PluginDir == "" {
		c.PluginDir = v1beta1.DevicePluginPath
	}
	if len(c.LibDirs) == 0 {
		c.LibDirs = hostLibDirs
	}
	return &c
}

// kubeletSocket is the path of the kubelet's registration socket.
func (p *Plugin) kubeletSocket() string {
	return filepath.Join(p.PluginDir, filepath.Base(v1beta1.KubeletSocket))
}

// serveUntilKubeletRestarts serves the plugin's socket and registers, until the kubelet
// starts again or ctx ends; stopping the server ends the ListAndWatch streams and
// removes the socket. A failed registration waits for the kubelet's next start too,
// since a kubelet that restarts mid-call fails it.
func (p *Plugin) serveUntilKubeletRestarts(ctx context.Context, w *fsnotify.Watcher, svc *service, log logr.Logger) error {
	srv, err := serve(filepath.Join(p.PluginDir, SocketName), svc)
	if err != nil {
		return err
	}
	defer srv.Stop()
	if err := p.register(ctx, log); err != nil && ctx.Err() == nil {
		log.Error(err, "Waiting for the kubelet to start again")
	}
	return waitForKubeletStart(ctx, w, filepath.Base(p.kubeletSocket()))
}

// serve listens on socket, replacing a stale file, and serves the DevicePlugin service
// there until the returned server stops.
func serve(socket string, svc *service) (*grpc.Server, error) {
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the stale plugin socket: %w", err)
	}
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, fmt.Errorf("listening on the plugin socket: %w", err)
	}
	srv := grpc.NewServer()
	v1beta1.RegisterDevicePluginServer(srv, svc)
	go func() { _ = srv.Serve(ln) }() // Serve returns when srv stops.
	return srv, nil
}

// register announces the plugin to the kubelet, if its socket is there yet.
// A kubelet yet to start needs no call: creating its socket starts the next round.
func (p *Plugin) register(ctx context.Context, log logr.Logger) error {
	if _, err := os.Stat(p.kubeletSocket()); errors.Is(err, os.ErrNotExist) {
		log.Info("Waiting for the kubelet to create its socket", "socket", p.kubeletSocket())
		return nil
	}
	conn, err := grpc.NewClient("unix:"+p.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("registering with the kubelet: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = v1beta1.NewRegistrationClient(conn).Register(ctx, &v1beta1.RegisterRequest{
		Version:      v1beta1.Version,
		Endpoint:     SocketName,
		ResourceName: string(tfjob.GPUResource),
		Options:      pluginOptions(),
	}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("registering with the kubelet: %w", err)
	}
	log.Info("Registered with the kubelet")
	return nil
}

// waitForKubeletStart returns when the kubelet creates its socket, or when ctx ends.
// The socket's creation is the sign that the kubelet (re)started and wiped the
// directory; so is a lost event, which might have been it.
func waitForKubeletStart(ctx context.Context, w *fsnotify.Watcher, kubeletSocket string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watching the device-plugin directory: the watcher closed")
			}
			if ev.Has(fsnotify.Create) && filepath.Base(ev.Name) == kubeletSocket {
				return nil
			}
		case err := <-w.Errors:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				return nil
			}
			return fmt.Errorf("watching the device-plugin directory: %w", err)
		}
	}
}
