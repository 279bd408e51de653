// Package e2e tests tfk8s end to end on the local cluster of `tfk8s local up`: real
// processes from bin/, a real bridge, real DNS and S3. It needs root and Linux.
package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/moby/sys/mountinfo"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// The e2e cluster's network: not the default one, so that it runs beside a
// developer's own local cluster and the node integration tests (10.250.0.0/24).
const (
	e2eBridge  = "tfk8se2e0"
	e2ePodCIDR = "10.249.0.0/24"
	e2eDNS     = "10.249.0.1:53"
)

// TestLocalCluster brings a local cluster up in a temporary directory on ports other
// than the defaults, checks every component as a user would reach it, brings it up
// again (nothing restarts, no image is sent again), restarts a crashed component,
// brings it down and checks that nothing is left on the host. Without tfk8s-node in
// bin/ it tests all the rest.
func TestLocalCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	withNode := fileExists(filepath.Join(binDir, "tfk8s-nodeinit"))
	if !withNode {
		t.Logf("no tfk8s-nodeinit in %s: testing the cluster without a node", binDir)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:      binDir,
		NodeName:    "e2e-node",
		PodCIDR:     e2ePodCIDR,
		Bridge:      e2eBridge,
		WithoutNode: !withNode,
	}, nil)
	userConfig := opts.UserConfigFile
	if !st.Running() {
		t.Fatalf("after up, not every component runs: %+v", st.Components)
	}
	pids := pidsOf(st)

	t.Run("API server", func(t *testing.T) { checkAPIServer(t, st.Kubeconfig) })
	if withNode {
		t.Run("node Ready", func(t *testing.T) { checkNodeReady(ctx, t, st.Kubeconfig, "e2e-node") })
	}
	t.Run("registry", func(t *testing.T) { checkRegistry(t, st, binDir) })
	t.Run("DNS", func(t *testing.T) { checkDNS(ctx, t) })
	t.Run("S3", func(t *testing.T) {
		if !st.UserConfigWritten {
			t.Errorf("up did not write %s, which did not exist", userConfig)
		}
		checkS3(ctx, t, st, userConfig)
	})
	if withNode {
		t.Run("a pod reaches DNS and S3, its log the API server", func(t *testing.T) {
			checkPodReachesServices(ctx, t, st.Kubeconfig, st.S3.Endpoint)
		})
		t.Run("a pod runs an image pushed with local load", func(t *testing.T) {
			checkLoadedImageRuns(ctx, t, opts, st.Kubeconfig, binDir)
		})
	}

	t.Run("up again restarts nothing and sends no image again", func(t *testing.T) {
		checkUpAgain(ctx, t, opts, pids, binDir)
	})

	// A crashed component is restarted alone, the node too: the bridge, where DNS
	// and S3 listen, is the host's, not the node's.
	crashes := []struct {
		component string
		restarted []string
	}{
		{"coredns", []string{"coredns"}},
		{"registry", []string{"registry"}},
	}
	if withNode {
		crashes = append(crashes, struct {
			component string
			restarted []string
		}{"tfk8s-node", []string{"tfk8s-node"}})
	}
	for _, crash := range crashes {
		t.Run("up restarts a crashed "+crash.component, func(t *testing.T) {
			pids = crashAndUp(ctx, t, opts, pids, crash.component, crash.restarted, userConfig)
		})
	}

	t.Run("down leaves nothing", func(t *testing.T) {
		checkDownLeavesNothing(ctx, t, opts, st.Kubeconfig, pids, withNode)
	})

	t.Run("a failed up stops what it started", func(t *testing.T) {
		checkFailedUpStops(ctx, t, opts, binDir)
	})

	t.Run("up refuses a taken port", func(t *testing.T) {
		checkTakenPortRefused(ctx, t, opts)
	})
}

// checkDownLeavesNothing brings the cluster down, with a running pod when it has a
// node, and wants no process, network or mount of it left.
func checkDownLeavesNothing(ctx context.Context, t *testing.T, opts localcluster.Options, kubeconfig string, pids map[string]int, withNode bool) {
	if withNode {
		startSleeper(ctx, t, kubeconfig)
	}
	if err := localcluster.Down(ctx, opts); err != nil {
		t.Fatalf("down: %v", err)
	}
	for name, pid := range pids {
		if processRuns(pid) {
			t.Errorf("%s (pid %d) still runs", name, pid)
		}
	}
	st, err := localcluster.StatusOf(opts)
	if err != nil || !st.Stopped() {
		t.Errorf("status after down: stopped %v, %v", st.Stopped(), err)
	}
	if left := leftNetwork(e2eBridge); len(left) > 0 {
		t.Errorf("left on the host: %v", left)
	}
	if mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(opts.Dir)); err != nil || len(mounts) > 0 {
		t.Errorf("mounts left under %s: %v %v", opts.Dir, mounts, err)
	}
}

// checkFailedUpStops brings up a cluster whose controller exits at once: up fails
// naming it and quoting its log, and stops what it started.
func checkFailedUpStops(ctx context.Context, t *testing.T, opts localcluster.Options, binDir string) {
	broken := opts
	broken.Dir = t.TempDir()
	broken.BinDir = binDirWithBrokenController(t, binDir)
	broken.Timeout = 20 * time.Second
	_, err := localcluster.Up(ctx, broken)
	if err == nil || !strings.Contains(err.Error(), "tfk8s-controller exited") || !strings.Contains(err.Error(), "no controller today") {
		t.Fatalf("up with a controller that exits: error = %v, want it to name the controller and quote its log", err)
	}
	st, err := localcluster.StatusOf(broken)
	if err != nil || !st.Stopped() {
		t.Errorf("after a failed up, something runs: %+v, %v", st, err)
	}
	if left := leftNetwork(e2eBridge); len(left) > 0 {
		t.Errorf("left on the host: %v", left)
	}
	if err := localcluster.Down(ctx, broken); err != nil {
		t.Errorf("down after a failed up: %v", err)
	}
}

// checkTakenPortRefused brings up a fresh cluster whose API server port is taken (on
// every address, the bridge's among them): up fails naming the port and
// kube-apiserver, and nothing runs.
func checkTakenPortRefused(ctx context.Context, t *testing.T, opts localcluster.Options) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := opts
	taken.Dir = t.TempDir() // a fresh cluster, not the one stopped above
	taken.Ports.APIServer = l.Addr().(*net.TCPAddr).Port
	_, err = localcluster.Up(ctx, taken)
	if err == nil { // what came up goes down again, so that no later test finds it
		defer localcluster.Down(context.Background(), taken)
	}
	if err == nil || !strings.Contains(err.Error(), "needed by kube-apiserver, is in use") {
		t.Errorf("up with the API server's port taken: error = %v, want one naming the port and kube-apiserver", err)
	}
	if st, err := localcluster.StatusOf(taken); err != nil || !st.Stopped() {
		t.Errorf("after a refused up, something runs: %v %v", st, err)
	}
}

// checkAPIServer reaches kube-apiserver through the written kubeconfig and wants the
// gang-scheduling API and the TFJob API served.
func checkAPIServer(t *testing.T, kubeconfig string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.GitVersion, "v1.") {
		t.Errorf("server version %q", v.GitVersion)
	}
	t.Logf("kube-apiserver %s", v.GitVersion)
	for _, gv := range []string{"scheduling.k8s.io/v1beta1", "tfk8s.io/v1alpha1"} {
		if _, err := dc.ServerResourcesForGroupVersion(gv); err != nil {
			t.Errorf("%s not served: %v", gv, err)
		}
	}
}

// checkUpAgain brings the running cluster up again: no component restarts (pids are
// the same), and every image of the source tree is pushed without sending a byte.
func checkUpAgain(ctx context.Context, t *testing.T, opts localcluster.Options, pids map[string]int, binDir string) {
	start := time.Now()
	var progress bytes.Buffer
	recorded := opts
	recorded.Progress = io.MultiWriter(&progress, testWriter{t})
	again, err := localcluster.Up(ctx, recorded)
	if err != nil {
		t.Fatalf("up again: %v", err)
	}
	t.Logf("up again took %v", time.Since(start).Round(time.Millisecond))
	if got := pidsOf(again); !equalMaps(pids, got) {
		t.Errorf("pids changed: before %v, after %v", pids, got)
	}
	pushed := regexp.MustCompile(`(?m)^pushed .*$`).FindAllString(progress.String(), -1)
	if len(pushed) != len(sourceImages(t, binDir)) {
		t.Errorf("up again pushed %d images, want the %d layouts of the source tree:\n%s", len(pushed), len(sourceImages(t, binDir)), progress.String())
	}
	for _, line := range pushed {
		if !strings.Contains(line, ", 0 B sent, ") {
			t.Errorf("up again sent an image again: %s", line)
		}
	}
}

// crashAndUp kills component, and wants up to restart it and only the components in
// restarted, DNS and S3 to serve afterwards; it returns the new pids.
func crashAndUp(ctx context.Context, t *testing.T, opts localcluster.Options, pids map[string]int, component string, restarted []string, userConfig string) map[string]int {
	crashed := pids[component]
	if err := syscall.Kill(crashed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, crashed)
	if st, err := localcluster.StatusOf(opts); err != nil || st.Running() {
		t.Fatalf("status after a crash: running %v, %v; want %s stopped", st.Running(), err, component)
	}
	again, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up after a crash: %v", err)
	}
	got := pidsOf(again)
	for name, pid := range pids {
		if moved := got[name] != pid; moved != slices.Contains(restarted, name) {
			t.Errorf("%s: pid %d before, %d after; want only %v restarted", name, pid, got[name], restarted)
		}
	}
	checkDNS(ctx, t)
	checkS3(ctx, t, again, userConfig)
	return got
}

// checkDNS resolves the kubernetes Service through the cluster DNS on the bridge.
func checkDNS(ctx context.Context, t *testing.T) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addrs, err := localcluster.LookupHost(ctx, e2eDNS, "kubernetes.default.svc.cluster.local.")
	if err != nil {
		t.Fatalf("resolving kubernetes.default.svc.cluster.local at %s: %v", e2eDNS, err)
	}
	if !slices.Contains(addrs, "10.96.0.1") {
		t.Errorf("kubernetes.default.svc.cluster.local = %v, want 10.96.0.1", addrs)
	}
}

// checkS3 reaches the bucket with the written settings, and wants the user's config
// file to hold them.
func checkS3(ctx context.Context, t *testing.T, st *localcluster.Status, userConfig string) {
	cfg, err := storage.LoadConfig(storage.Config{}, func(string) string { return "" }, userConfig)
	if err != nil {
		t.Fatalf("reading %s: %v", userConfig, err)
	}
	if cfg != st.S3 {
		t.Errorf("user config %+v, want the cluster's S3 settings %+v", cfg, st.S3)
	}
	if !strings.HasPrefix(cfg.Endpoint, "10.249.0.1:") || cfg.Bucket != localcluster.Bucket {
		t.Errorf("S3 endpoint %s bucket %s, want the bridge address and bucket %s", cfg.Endpoint, cfg.Bucket, localcluster.Bucket)
	}
	mc, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKeyID, cfg.SecretAccessKey, ""), Region: cfg.Region})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := mc.BucketExists(ctx, cfg.Bucket)
	if err != nil || !ok {
		t.Fatalf("bucket %s exists: %v, %v", cfg.Bucket, ok, err)
	}
	body := "hello from the e2e test"
	if _, err := mc.PutObject(ctx, cfg.Bucket, "e2e/hello", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("putting an object: %v", err)
	}
}

// freePorts picks free ports for the cluster's components.
func freePorts(t *testing.T) localcluster.Ports {
	t.Helper()
	p, err := localcluster.FreePorts()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pidsOf maps each component to its pid.
func pidsOf(st *localcluster.Status) map[string]int {
	m := map[string]int{}
	for _, c := range st.Components {
		m[c.Name] = c.PID
	}
	return m
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// processRuns reports whether pid is a live process (not a zombie).
func processRuns(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}

// waitGone waits until pid has ended.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for processRuns(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// testWriter sends Up's and Down's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
