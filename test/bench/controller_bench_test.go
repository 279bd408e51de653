// Package bench measures tfk8s against a real control plane. Speed goals are ratios
// measured in one run: the controller against a raw client-go loop on the same API
// server, so a busy machine slows both alike.
package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/testutil"
)

// creators is the parallelism of the raw loop, and of the controller's pod creation.
const creators = 32

// BenchmarkPodCreation prints, in one run: (a) a raw client-go loop creating N pods with
// 32 parallel creators; (b) the controller materialising a 1 PS + 1000 worker TFJob (its
// 1001 pods and its Service); (c) 300 jobs of 1 PS + 2 workers created at once (900
// pods); each in seconds and as a ratio to the raw loop for the same pods; and the
// controller's peak RSS.
func BenchmarkPodCreation(b *testing.B) {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Stop()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctl, err := startControllerProcess(cp)
	if err != nil {
		b.Fatal(err)
	}
	defer ctl.stop()
	b.Logf("kube-apiserver %s; controller pid %d", cp.Version.GitVersion, ctl.cmd.Process.Pid)

	// Warm the API server up (caches, connections, etcd) before anything is measured.
	var warm []*corev1.Pod
	for i := range 300 {
		warm = append(warm, podsOf(b, testutil.MakeTFJob(fmt.Sprintf("warm-%d", i), "").Workers(2).Obj(), "")...)
	}
	measure(b, c, cfg, "warm-up", nil, func(ns string) error { return createRaw(ctx, c, ns, warm) }, len(warm))

	for range b.N {
		// (a) The raw loop, creating exactly the pods the controller would.
		bigJob := testutil.MakeTFJob("big", "").PS(1).Workers(1000).Obj()
		rawBig := measure(b, c, cfg, "raw-1001", nil, func(ns string) error {
			return createRaw(ctx, c, ns, podsOf(b, bigJob, ns))
		}, 1001)
		var small []*corev1.Pod
		for i := range 300 {
			small = append(small, podsOf(b, testutil.MakeTFJob(fmt.Sprintf("small-%d", i), "").PS(1).Workers(2).Obj(), "")...)
		}
		rawSmall := measure(b, c, cfg, "raw-900", nil, func(ns string) error { return createRaw(ctx, c, ns, small) }, 900)

		// (b) One 1 PS + 1000 worker TFJob, until its 1001 pods and its Service exist.
		big := measure(b, c, cfg, "tfjob-1001", nil, func(ns string) error {
			job := bigJob.DeepCopy()
			job.Namespace = ns
			if err := c.Create(ctx, job); err != nil {
				return err
			}
			return waitService(ctx, c, ns, job.Name)
		}, 1001)

		// (c) 300 TFJobs of 1 PS + 2 workers, created at once, until their 900 pods exist.
		many := measure(b, c, cfg, "tfjob-300x3", nil, func(ns string) error {
			var jobs []client.Object
			for i := range 300 {
				jobs = append(jobs, testutil.MakeTFJob(fmt.Sprintf("small-%d", i), ns).PS(1).Workers(2).Obj())
			}
			return createParallel(ctx, c, jobs)
		}, 900)

		rss := ctl.peakRSS()

		// (c') The same 300 jobs waiting while the controller is down (a backlog after an
		// upgrade or a crash): the time from its start until their 900 pods exist is the
		// controller's own cost, without the API server's cost of creating the jobs.
		ctl.stop()
		backlog := measure(b, c, cfg, "tfjob-backlog-300x3", func(ns string) error {
			var jobs []client.Object
			for i := range 300 {
				jobs = append(jobs, testutil.MakeTFJob(fmt.Sprintf("small-%d", i), ns).PS(1).Workers(2).Obj())
			}
			return createParallel(ctx, c, jobs)
		}, func(string) error {
			var err error
			ctl, err = startControllerProcess(cp)
			return err
		}, 900)
		rss = max(rss, ctl.peakRSS())
		fmt.Printf("\n%-52s %8s %8s\n", "scenario", "seconds", "ratio")
		fmt.Printf("%-52s %8.2f %8s\n", "(a) raw client-go, 32 creators, 1001 pods", rawBig.Seconds(), "1.00")
		fmt.Printf("%-52s %8.2f %8.2f\n", "(b) TFJob 1 PS + 1000 workers: 1001 pods + Service", big.Seconds(), big.Seconds()/rawBig.Seconds())
		fmt.Printf("%-52s %8.2f %8s\n", "(a) raw client-go, 32 creators, 900 pods", rawSmall.Seconds(), "1.00")
		fmt.Printf("%-52s %8.2f %8.2f\n", "(c) 300 TFJobs of 1 PS + 2 workers: 900 pods", many.Seconds(), many.Seconds()/rawSmall.Seconds())
		fmt.Printf("%-52s %8.2f %8.2f\n", "(c') the same 300 TFJobs, waiting for the controller", backlog.Seconds(), backlog.Seconds()/rawSmall.Seconds())
		fmt.Printf("controller peak RSS: %.1f MiB\n\n", float64(rss)/(1<<20))
		b.ReportMetric(big.Seconds()/rawBig.Seconds(), "ratio-1000-workers")
		b.ReportMetric(many.Seconds()/rawSmall.Seconds(), "ratio-300-jobs")
		b.ReportMetric(backlog.Seconds()/rawSmall.Seconds(), "ratio-300-jobs-backlog")
		b.ReportMetric(float64(rss)/(1<<20), "controller-peak-MiB")
	}
}

// measure runs setup (if any), then create, in a fresh namespace and returns the time
// from the start of create until the namespace holds want pods, as seen by a watch
// started before create.
func measure(b *testing.B, c client.Client, cfg *rest.Config, name string, setup, create func(ns string) error, want int) time.Duration {
	b.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + name}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	waitDefaultServiceAccount(b, c, ns.Name)
	if setup != nil {
		if err := setup(ns.Name); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
	}
	seen, err := watchPodCount(ctx, cfg, ns.Name, want)
	if err != nil {
		b.Fatal(err)
	}
	cpuBefore := cpuSeconds()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- create(ns.Name) }()
	var createErr error
	created := false
	for !created || seen != nil {
		select {
		case <-seen:
			seen = nil
		case createErr = <-errc:
			created = true
			if createErr != nil {
				b.Fatalf("%s: %v", name, createErr)
			}
		case <-time.After(5 * time.Minute):
			b.Fatalf("%s: %d pods not seen within 5 minutes", name, want)
		}
	}
	elapsed := time.Since(start)
	b.Logf("%s: %d pods in %.2fs; CPU seconds meanwhile: %s", name, want, elapsed.Seconds(), cpuDelta(cpuBefore, cpuSeconds()))
	return elapsed
}

// watchPodCount returns a channel closed once want pods exist in namespace ns, as seen
// by a metadata informer started now (it lists, then watches, and re-lists on errors).
func watchPodCount(ctx context.Context, cfg *rest.Config, ns string, want int) (<-chan struct{}, error) {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	informer := metadatainformer.NewFilteredMetadataInformer(mc, schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		ns, 0, cache.Indexers{}, nil).Informer()
	done := make(chan struct{})
	stop := make(chan struct{})
	var once sync.Once
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		if len(informer.GetStore().ListKeys()) >= want {
			once.Do(func() { close(done); close(stop) })
		}
	}})
	if err != nil {
		return nil, err
	}
	go informer.Run(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("pod informer for %s did not sync", ns)
	}
	return done, nil
}

// podsOf builds the pods the controller creates for job, minus what would tie them to
// it (owner, finalizer, job label), so the raw loop sends the same bytes.
func podsOf(b testing.TB, job *tfv1.TFJob, ns string) []*corev1.Pod {
	b.Helper()
	job.UID = "00000000-0000-0000-0000-000000000000"
	var pods []*corev1.Pod
	for _, rt := range tfv1.ReplicaTypes {
		spec := job.Spec.TFReplicaSpecs[rt]
		if spec == nil {
			continue
		}
		for i := range *spec.Replicas {
			pod, err := controller.ConstructPod(job, rt, i, controller.PodOptions{})
			if err != nil {
				b.Fatal(err)
			}
			pod.Namespace = ns
			pod.OwnerReferences, pod.Finalizers = nil, nil
			delete(pod.Labels, tfv1.LabelJobName)
			pods = append(pods, pod)
		}
	}
	return pods
}

func createRaw(ctx context.Context, c client.Client, ns string, pods []*corev1.Pod) error {
	objs := make([]client.Object, len(pods))
	for i, p := range pods {
		p = p.DeepCopy()
		p.Namespace = ns
		objs[i] = p
	}
	return createParallel(ctx, c, objs)
}

// createParallel creates objects with 32 parallel creators.
func createParallel(ctx context.Context, c client.Client, objs []client.Object) error {
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for obj := range work {
				if err := c.Create(ctx, obj); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, obj := range objs {
		work <- obj
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func waitService(ctx context.Context, c client.Client, ns, name string) error {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Service{}); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("service %s/%s not created", ns, name)
}

func waitDefaultServiceAccount(b *testing.B, c client.Client, ns string) {
	b.Helper()
	for range 600 {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{}); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("namespace %s has no default ServiceAccount", ns)
}

// controllerProcess is bin/tfk8s-controller running against the control plane.
type controllerProcess struct {
	cmd *exec.Cmd
}

func startControllerProcess(cp *controlplane.ControlPlane) (*controllerProcess, error) {
	bin, err := controlplane.DefaultBinDir()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "tfk8s-controller"),
		"--kubeconfig="+cp.Kubeconfig(), "--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--pod-create-concurrency=%d", creators), "--zap-log-level=error")
	// TFK8S_BENCH_CONTROLLER_ARGS adds flags, e.g. "--zap-log-level=2" to trace reconciles.
	cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("TFK8S_BENCH_CONTROLLER_ARGS"))...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting tfk8s-controller (run make build): %w", err)
	}
	return &controllerProcess{cmd: cmd}, nil
}

// peakRSS is the controller's high-water mark of resident memory, in bytes.
func (p *controllerProcess) peakRSS() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

func (p *controllerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// cpuSeconds returns the CPU time used so far by this machine's control plane processes,
// tfk8s-controller and this benchmark, by command name.
func cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// comm is in parentheses; utime and stime are fields 14 and 15.
		end := strings.LastIndexByte(string(stat), ')')
		start := strings.IndexByte(string(stat), '(')
		if start < 0 || end < 0 {
			continue
		}
		comm := string(stat[start+1 : end])
		switch {
		case strings.HasPrefix(comm, "kube-"), comm == "etcd", comm == "tfk8s-controlle", pid == os.Getpid():
		default:
			continue
		}
		fields := strings.Fields(string(stat[end+2:]))
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		if pid == os.Getpid() {
			comm = "bench"
		}
		out[comm] += (utime + stime) / 100 // clock ticks
	}
	return out
}

func cpuDelta(before, after map[string]float64) string {
	var parts []string
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller", "tfk8s-controlle", "bench"} {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, after[name]-before[name]))
	}
	return strings.Join(parts, ", ")
}
