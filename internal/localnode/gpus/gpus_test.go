package gpus_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tfk8s/tfk8s/internal/localnode/gpus"
)

// timeout bounds every wait of these tests.
const timeout = 10 * time.Second

var errRunHung = errors.New("the plugin's Run did not return in time")

// kubelet is the kubelet's side of the registration API, serving kubelet.sock: it
// records each registration and answers with refusal.
type kubelet struct {
	v1beta1.UnimplementedRegistrationServer
	registrations chan *v1beta1.RegisterRequest
	refusal       error
	srv           *grpc.Server
	done          chan struct{}
}

func (k *kubelet) Register(ctx context.Context, req *v1beta1.RegisterRequest) (*v1beta1.Empty, error) {
	select {
	case k.registrations <- req:
	case <-ctx.Done():
	}
	return &v1beta1.Empty{}, k.refusal
}

// startKubelet serves the registration API on dir/kubelet.sock until the test ends.
func startKubelet(t *testing.T, dir string, refusal error) *kubelet {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &kubelet{registrations: make(chan *v1beta1.RegisterRequest, 8), refusal: refusal, srv: grpc.NewServer(), done: make(chan struct{})}
	v1beta1.RegisterRegistrationServer(k.srv, k)
	go func() { defer close(k.done); _ = k.srv.Serve(ln) }()
	t.Cleanup(k.stop)
	return k
}

// stop stops the kubelet's server, which removes its socket.
func (k *kubelet) stop() { k.srv.Stop(); <-k.done }

func (k *kubelet) nextRegistration(t *testing.T) *v1beta1.RegisterRequest {
	t.Helper()
	select {
	case req := <-k.registrations:
		return req
	case <-time.After(timeout):
		t.Fatalf("no registration within %v", timeout)
		return nil
	}
}

// pluginDir is a new device-plugin directory, short enough a path for unix sockets.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// devDir is a directory of plain files standing for the host's device nodes.
func devDir(t *testing.T, nodes ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range nodes {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// run is a Plugin.Run in a goroutine; result waits, boundedly, for what it returns.
type run struct {
	cancel context.CancelFunc
	result func() error
}

// startPlugin runs p until the test ends or run.cancel is called.
func startPlugin(t *testing.T, p *gpus.Plugin) run {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- p.Run(ctx) }()
	r := run{cancel: cancel, result: sync.OnceValue(func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(timeout):
			return errRunHung
		}
	})}
	t.Cleanup(func() {
		cancel()
		if errors.Is(r.result(), errRunHung) {
			t.Error(errRunHung)
		}
	})
	return r
}

// dial connects to the plugin's endpoint as the kubelet does.
func dial(t *testing.T, dir, endpoint string) v1beta1.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix:"+filepath.Join(dir, endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return v1beta1.NewDevicePluginClient(conn)
}

// listDevices calls ListAndWatch and returns the first list and the open stream.
func listDevices(t *testing.T, c v1beta1.DevicePluginClient) ([]*v1beta1.Device, v1beta1.DevicePlugin_ListAndWatchClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	stream, err := c.ListAndWatch(ctx, &v1beta1.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp.Devices, stream
}

func healthy(ids ...string) []*v1beta1.Device {
	devs := make([]*v1beta1.Device, len(ids))
	for i, id := range ids {
		devs[i] = &v1beta1.Device{ID: id, Health: v1beta1.Healthy}
	}
	return devs
}

func TestRunRegistersAndRemovesItsSocketOnReturn(t *testing.T) {
	dir := pluginDir(t)
	k := startKubelet(t, dir, nil)
	r := startPlugin(t, &gpus.Plugin{Count: 2, DevDir: devDir(t), PluginDir: dir})

	want := &v1beta1.RegisterRequest{
		Version: "v1beta1", Endpoint: "tfk8s-gpus.sock", ResourceName: "nvidia.com/gpu",
		Options: &v1beta1.DevicePluginOptions{},
	}
	if diff := cmp.Diff(want, k.nextRegistration(t), protocmp.Transform()); diff != "" {
		t.Errorf("registration (-want +got):\n%s", diff)
	}
	r.cancel()
	if err := r.result(); err != nil {
		t.Fatalf("Run returned %v after its context ended; want nil", err)
	}
	if _, err := os.Stat(filepath.Join(dir, gpus.SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plugin socket after Run returned: %v; want it removed", err)
	}
}

func TestListAndWatchSendsHealthyGPUsUntilThePluginStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int
		want  []*v1beta1.Device
	}{
		{name: "one GPU", count: 1, want: healthy("0")},
		{name: "four GPUs", count: 4, want: healthy("0", "1", "2", "3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := pluginDir(t)
			k := startKubelet(t, dir, nil)
			r := startPlugin(t, &gpus.Plugin{Count: tc.count, DevDir: devDir(t), PluginDir: dir})
			got, stream := listDevices(t, dial(t, dir, k.nextRegistration(t).Endpoint))
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
			r.cancel()
			if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
				t.Errorf("after the plugin stopped, the stream gave %v; want it cut (Unavailable), not ended or sent again", err)
			}
		})
	}
}

func TestRunRegistersAgainWhenTheKubeletRestarts(t *testing.T) {
	dir := pluginDir(t)
	first := startKubelet(t, dir, nil)
	startPlugin(t, &gpus.Plugin{Count: 2, DevDir: devDir(t), PluginDir: dir})
	first.nextRegistration(t)

	// The kubelet stops, and when it starts deletes every socket in the directory.
	first.stop()
	for _, name := range []string{"kubelet.sock", gpus.SocketName} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	second := startKubelet(t, dir, nil)

	req := second.nextRegistration(t)
	if req.Endpoint != gpus.SocketName {
		t.Errorf("second registration's endpoint = %q; want %q", req.Endpoint, gpus.SocketName)
	}
	got, _ := listDevices(t, dial(t, dir, req.Endpoint))
	if diff := cmp.Diff(healthy("0", "1"), got, protocmp.Transform()); diff != "" {
		t.Errorf("devices after the restart (-want +got):\n%s", diff)
	}
}

func TestRunWaitsForTheKubeletToStart(t *testing.T) {
	dir := pluginDir(t)
	startPlugin(t, &gpus.Plugin{Count: 1, DevDir: devDir(t), PluginDir: dir})
	waitForFile(t, filepath.Join(dir, gpus.SocketName))
	k := startKubelet(t, dir, nil)
	if req := k.nextRegistration(t); req.ResourceName != "nvidia.com/gpu" {
		t.Errorf("registered resource %q; want nvidia.com/gpu", req.ResourceName)
	}
}

// waitForFile waits, boundedly, until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear within %v", path, timeout)
}

func TestRunRegistersAgainAfterARefusal(t *testing.T) {
	dir := pluginDir(t)
	refusing := startKubelet(t, dir, status.Error(codes.InvalidArgument, "unsupported version"))
	startPlugin(t, &gpus.Plugin{Count: 1, DevDir: devDir(t), PluginDir: dir})
	refusing.nextRegistration(t)

	refusing.stop()
	accepting := startKubelet(t, dir, nil)
	req := accepting.nextRegistration(t)
	got, _ := listDevices(t, dial(t, dir, req.Endpoint))
	if diff := cmp.Diff(healthy("0"), got, protocmp.Transform()); diff != "" {
		t.Errorf("devices after the refusal (-want +got):\n%s", diff)
	}
}

func TestRunWithNoGPUsDoesNothing(t *testing.T) {
	dir := pluginDir(t)
	k := startKubelet(t, dir, nil)
	if err := startPlugin(t, &gpus.Plugin{Count: 0, DevDir: devDir(t), PluginDir: dir}).result(); err != nil {
		t.Fatalf("Run = %v; want nil at once", err)
	}
	select {
	case req := <-k.registrations:
		t.Errorf("registered %v; want no registration", req)
	default:
	}
	if _, err := os.Stat(filepath.Join(dir, gpus.SocketName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plugin socket: %v; want none", err)
	}
}
