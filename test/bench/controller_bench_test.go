// Package bench measures tfk8s against a real control plane. Speed goals are ratios
// measured in one run: the controller against a raw client-go loop on the same API
// server, so a busy machine slows both alike.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// creators is the parallelism of the raw loop, and of the controller's pod creation.
const creators = 32

// BenchmarkPodCreation prints, in one run: (a) a raw client-go loop creating N pods with
// 32 parallel creators; (b) the controller materialising a 1 PS + 1000 worker TFJob (its
// 1001 pods and its Service) and (d) a 1 PS + 9999 worker TFJob (10,000 pods), both run
// by the agent; (c) 1000 jobs of 1 PS + 2 workers created at once (3000 pods); each in
// seconds and as a ratio to the raw loop for the same pods, the median of the rounds;
// the bytes each pod of (b) and (d) takes in the API server's storage, against the
// inline TF_CONFIG tfk8s wrote before; and the controller's peak RSS. For (c) it also
// prints (a+), the raw loop making the same writes as the user and tfk8s together:
// each of the 1000 TFJobs, then its Service, its pods and its status. The API server
// spends more on those than on the pods alone, so (a+) is the floor for (c). Goals: (d) ≤ 1.3×,
// (c) ≤ 1.2× (a+), the same bytes per pod at 1000 and 10,000 workers.
func BenchmarkPodCreation(b *testing.B) {
	ctx := context.Background()
	var opts controlplane.Options
	if os.Getenv("TFK8S_BENCH_PPROF") != "" {
		opts.ExtraAPIServerArgs = []string{"--profiling=true"} // the later flag wins
	}
	cp, stop := startControlPlane(b, opts, false)
	defer stop()
	r := newRig(b, cp)
	r.startController()
	defer r.ctl.stop()
	b.Logf("kube-apiserver %s; controller pid %d", cp.Version.GitVersion, r.ctl.cmd.Process.Pid)

	// Warm the API server up (caches, connections, etcd) before anything is measured.
	var warm []*corev1.Pod
	for i := range sized(300, 3) {
		warm = append(warm, podsOf(b, testutil.MakeTFJob(fmt.Sprintf("warm-%d", i), "").Workers(2).Obj(), "")...)
	}
	r.measure("warm-up", nil, func(ns string) error { return createRaw(ctx, r.c, ns, warm) }, len(warm))

	for range b.N {
		// Each scenario is measured in rounds, each round the raw loop and then tfk8s
		// on the same pods, so that both meet the same API server: its heap, and so its
		// garbage collection, grows with every scenario. The round with the median
		// ratio is reported. The large jobs come last.
		var many, big, huge []pair
		for i := range rounds {
			many = append(many, r.pair(i, fmt.Sprintf("%dx3", smallJobCount), r.createSmallJobs, smallJobs))
		}
		for i := range rounds {
			big = append(big, r.pair(i, fmt.Sprint(bigWorkers+1), r.createBigJob(bigWorkers), bigJob(bigWorkers)))
		}
		for i := range hugeRounds {
			huge = append(huge, r.pair(i, fmt.Sprint(hugeWorkers+1), r.createBigJob(hugeWorkers), bigJob(hugeWorkers)))
		}
		rss := r.ctl.peakRSS()
		var table strings.Builder
		printScenarios(&table, many, big, huge)
		printBytesPerPod(&table, r, b)
		fmt.Fprintf(&table, "controller peak RSS: %.1f MiB\n", float64(rss)/(1<<20))
		fmt.Printf("\n%s\n", table.String())
		writeReport(b, "Pod creation", "`BenchmarkPodCreation`, "+time.Now().UTC().Format("2006-01-02")+
			", kube-apiserver "+cp.Version.GitVersion+" started by internal/controlplane (the control plane of local mode), on "+
			machine()+":\n\n```\n"+table.String()+"```")
		m := median(many)
		b.ReportMetric(median(huge).ratio(), "ratio-10000-replicas")
		b.ReportMetric(median(big).ratio(), "ratio-1000-workers")
		b.ReportMetric(m.tfk8s.Seconds()/m.rawWrites.Seconds(), "ratio-1000-jobs-same-writes")
		b.ReportMetric(float64(rss)/(1<<20), "controller-peak-MiB")
	}
}

// rounds is how many times each scenario is measured; hugeRounds, the 10,000-replica job.
// smallJobCount, bigWorkers and hugeWorkers size scenarios (c), (b) and (d).
var (
	rounds        = sized(3, 1)
	hugeRounds    = 1
	smallJobCount = sized(1000, 10)
	bigWorkers    = sized[int32](1000, 10)
	hugeWorkers   = sized[int32](9999, 19)
)

// printScenarios writes the table of times and ratios.
func printScenarios(w *strings.Builder, many, big, huge []pair) {
	fmt.Fprintf(w, "%-56s %8s %8s   %s\n", "scenario (the round with the median ratio)", "seconds", "ratio", "every round's ratio")
	report(w, fmt.Sprintf("(a) raw client-go, 32 creators, %d pods", 3*smallJobCount),
		fmt.Sprintf("(c) %d TFJobs of 1 PS + 2 workers: %d pods + Services", smallJobCount, 3*smallJobCount), many)
	m := median(many)
	fmt.Fprintf(w, "%-56s %8.2f %8.2f   (c) against it: %.2f (goal ≤ 1.2)\n", "(a+) raw: the same TFJobs, Services, pods and statuses",
		m.rawWrites.Seconds(), m.rawWrites.Seconds()/m.raw.Seconds(), m.tfk8s.Seconds()/m.rawWrites.Seconds())
	for _, s := range []struct {
		workers int32
		name    string
		rounds  []pair
	}{{bigWorkers, "(b)", big}, {hugeWorkers, "(d)", huge}} {
		report(w, fmt.Sprintf("(a) raw client-go, 32 creators, %d pods", s.workers+1),
			fmt.Sprintf("%s TFJob 1 PS + %d workers: %d pods + Service", s.name, s.workers, s.workers+1), s.rounds)
	}
	fmt.Fprintf(w, "%-56s %8s %8s   goal ≤ 1.3\n", "", "", "")
}

// printBytesPerPod writes what a pod of (b) and (d) takes in storage, read back from
// the API server, and what it took with TF_CONFIG inline.
func printBytesPerPod(w *strings.Builder, r *rig, b *testing.B) {
	fmt.Fprintf(w, "\n%-56s %8s %8s\n", "bytes per pod, as stored (protobuf, read back)", "bytes", "pods")
	for _, s := range []struct{ name, ns string }{
		{fmt.Sprintf("(b) %d workers, run by the agent", bigWorkers), namespace(fmt.Sprintf("tfjob-%d-0", bigWorkers+1))},
		{fmt.Sprintf("(d) %d workers, run by the agent", hugeWorkers), namespace(fmt.Sprintf("tfjob-%d-0", hugeWorkers+1))},
	} {
		perPod, n := r.bytesPerPod(s.ns)
		fmt.Fprintf(w, "%-56s %8.0f %8d\n", s.name, perPod, n)
	}
	fmt.Fprintf(w, "%-56s %8.0f %8s\n", fmt.Sprintf("%d workers, TF_CONFIG inline (no agent; as built)", bigWorkers), inlineBytesPerPod(b, bigJob(bigWorkers)("bench")[0]), "")
}

// createSmallJobs creates the jobs of (c) and waits for their Services.
func (r *rig) createSmallJobs(ns string) error {
	ctx := context.Background()
	jobs := smallJobs(ns)
	if err := createJobs(ctx, r.c, jobs); err != nil {
		return err
	}
	return r.waitServices(ns, len(jobs))
}

// waitServices waits, at most 15 minutes, until namespace ns holds n Services: those of
// the n jobs just created.
func (r *rig) waitServices(ns string, n int) error {
	services, err := watchCount(context.Background(), r.cfg, "services", ns, n)
	if err != nil {
		return err
	}
	select {
	case <-services:
		return nil
	case <-time.After(15 * time.Minute):
		return fmt.Errorf("the Services of %d jobs not created within 15 minutes", n)
	}
}

// createBigJob creates the job of (b) or (d) and waits for its Service.
func (r *rig) createBigJob(workers int32) func(ns string) error {
	return func(ns string) error {
		job := bigJob(workers)(ns)[0]
		if err := r.c.Create(context.Background(), job); err != nil {
			return err
		}
		return waitService(context.Background(), r.c, ns, job.Name)
	}
}

// bigJob is scenario (b) or (d): one TFJob of 1 PS and workers workers, run by the agent.
func bigJob(workers int32) func(ns string) []*tfv1.TFJob {
	return func(ns string) []*tfv1.TFJob { return []*tfv1.TFJob{agentJob("big", ns, workers)} }
}

// smallJobs is scenario (c): 1000 TFJobs of 1 PS and 2 workers.
func smallJobs(ns string) []*tfv1.TFJob {
	var jobs []*tfv1.TFJob
	for i := range smallJobCount {
		jobs = append(jobs, testutil.MakeTFJob(fmt.Sprintf("small-%d", i), ns).PS(1).Workers(2).Obj())
	}
	return jobs
}

// machine describes the CPUs the benchmark ran on and how busy they were: a load
// average well above their number means other work shared them and slowed both sides.
func machine() string {
	load, _ := os.ReadFile("/proc/loadavg")
	avg, _, _ := strings.Cut(string(load), " ")
	return fmt.Sprintf("%d CPUs, load average %s over the last minute", runtime.NumCPU(), cmp.Or(avg, "unknown"))
}

// pair is one round of a scenario: the raw loop's time and tfk8s's for the same pods
// and, for (c), the raw loop's time for the same writes as tfk8s (rawWrites).
type pair struct{ raw, rawWrites, tfk8s time.Duration }

func (p pair) ratio() float64 { return p.tfk8s.Seconds() / p.raw.Seconds() }

// median returns the round with the median ratio.
func median(rounds []pair) pair {
	sorted := slices.SortedFunc(slices.Values(rounds), func(a, b pair) int { return cmp.Compare(a.ratio(), b.ratio()) })
	return sorted[len(sorted)/2]
}

func report(w *strings.Builder, rawName, name string, rounds []pair) {
	m := median(rounds)
	var ratios []string
	for _, p := range rounds {
		ratios = append(ratios, fmt.Sprintf("%.2f", p.ratio()))
	}
	fmt.Fprintf(w, "%-56s %8.2f %8s\n", rawName, m.raw.Seconds(), "1.00")
	fmt.Fprintf(w, "%-56s %8.2f %8.2f   %s\n", name, m.tfk8s.Seconds(), m.ratio(), strings.Join(ratios, " "))
}

// pair measures round i of a scenario: the raw loop creating the pods of jobs(ns), then
// create in namespace ns, until the same number of pods exist. With more than one job,
// the raw loop also makes the same writes as tfk8s: it creates each job (managed by
// another controller, so that tfk8s leaves it alone) and then its pods.
func (r *rig) pair(i int, scenario string, create func(ns string) error, jobs func(ns string) []*tfv1.TFJob) pair {
	ctx := context.Background()
	tfNS := namespace(fmt.Sprintf("tfjob-%s-%d", scenario, i))
	// The raw loop's pods are built before its clock starts, for the namespace of the
	// TFJobs, so that their TF_CONFIG holds the same bytes.
	var pods []*corev1.Pod
	podsByJob := map[string][]*corev1.Pod{}
	for _, job := range jobs(tfNS) {
		jobPods := podsOf(r.b, job, tfNS)
		pods = append(pods, jobPods...)
		podsByJob[job.Name] = jobPods
	}
	var p pair
	p.raw = r.measure(fmt.Sprintf("raw-%s-%d", scenario, i), nil, func(ns string) error { return createRaw(ctx, r.c, ns, pods) }, len(pods))
	if len(podsByJob) > 1 {
		p.rawWrites = r.measure(fmt.Sprintf("raw-writes-%s-%d", scenario, i), nil, func(ns string) error {
			return createJobsThenPods(ctx, r.c, ns, jobs(ns), podsByJob)
		}, len(pods))
	}
	p.tfk8s = r.measure(fmt.Sprintf("tfjob-%s-%d", scenario, i), nil, create, len(pods))
	return p
}

// createJobsThenPods is a controller with no cost of its own, making the writes tfk8s
// makes: 32 creators, each creating a job (managed by another controller, so that
// tfk8s leaves it alone), its headless Service and its pods, and then writing the
// job's status as tfk8s writes it once its pods are created.
func createJobsThenPods(ctx context.Context, c client.Client, ns string, jobs []*tfv1.TFJob, podsByJob map[string][]*corev1.Pod) error {
	return inParallel(jobs, func(job *tfv1.TFJob) error {
		job.Spec.RunPolicy.ManagedBy = ptr.To("bench.tfk8s.io/raw")
		if err := c.Create(ctx, job); err != nil {
			return err
		}
		if err := c.Create(ctx, rawService(job)); err != nil {
			return err
		}
		for _, pod := range podsByJob[job.Name] {
			pod = pod.DeepCopy()
			pod.Namespace = ns
			pod.Labels[rawJobLabel] = job.Name
			if err := c.Create(ctx, pod); err != nil {
				return err
			}
		}
		created := job.DeepCopy()
		job.Status = createdStatus(job, metav1.Now())
		return c.Status().Patch(ctx, job, client.MergeFromWithOptions(created, client.MergeFromWithOptimisticLock{}))
	})
}

// createdStatus is the status tfk8s writes to a job whose pods it has just created.
func createdStatus(job *tfv1.TFJob, now metav1.Time) tfv1.TFJobStatus {
	st := tfv1.TFJobStatus{
		State:              tfv1.JobCreated,
		StartTime:          &now,
		ObservedGeneration: job.Generation,
		Conditions: []metav1.Condition{{
			Type: string(tfv1.JobCreated), Status: metav1.ConditionTrue, ObservedGeneration: job.Generation,
			LastTransitionTime: now, Reason: tfv1.ReasonCreated, Message: fmt.Sprintf(tfv1.MessageCreated, job.Namespace, job.Name),
		}},
		ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{},
	}
	for rt := range job.Spec.TFReplicaSpecs {
		st.ReplicaStatuses[rt] = &tfv1.ReplicaStatus{}
	}
	return st
}

// rawJobLabel selects a raw job's pods for its Service.
const rawJobLabel = "bench.tfk8s.io/job"

// rawService is a job's headless Service, as tfk8s creates it, selecting its raw pods.
func rawService(job *tfv1.TFJob) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: job.Name, Namespace: job.Namespace},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 map[string]string{rawJobLabel: job.Name},
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "tfjob-port", Port: 2222, Protocol: corev1.ProtocolTCP}},
		},
	}
}

// settle waits until the API server has taken no write for a second (at most a minute):
// what the last scenario left to do (the controller's deferred status writes and
// Services, their endpoints) must not slow the next one down.
func (r *rig) settle() {
	if smoke { // a smoke run's figures mean nothing: at least a second a scenario saved
		return
	}
	total := func() float64 {
		var n float64
		for _, v := range r.requestCounts() {
			n += v
		}
		return n
	}
	last, quiet := total(), 0
	for range 240 {
		time.Sleep(250 * time.Millisecond)
		if n := total(); n != last {
			last, quiet = n, 0
			continue
		}
		if quiet++; quiet == 4 {
			return
		}
	}
	r.b.Log("the API server kept taking writes for a minute; measuring anyway")
}

// createJobs creates TFJobs with 32 parallel creators.
func createJobs(ctx context.Context, c client.Client, jobs []*tfv1.TFJob) error {
	objs := make([]client.Object, len(jobs))
	for i, job := range jobs {
		objs[i] = job
	}
	return createParallel(ctx, c, objs)
}

// rig is the benchmark's control plane, client and controller process.
type rig struct {
	b   *testing.B
	cp  *controlplane.ControlPlane
	cfg *rest.Config
	c   client.Client
	// hc reads the API server's metrics, every 250 ms while the benchmark settles.
	hc  *http.Client
	ctl *controllerProcess
}

// newRig is a rig on cp, its client allowed 5000 queries a second, without a controller.
func newRig(b *testing.B, cp *controlplane.ControlPlane) *rig {
	r := &rig{b: b, cp: cp, cfg: rest.CopyConfig(cp.Config)}
	r.cfg.QPS, r.cfg.Burst = 5000, 5000
	var err error
	if r.c, err = client.New(r.cfg, client.Options{Scheme: scheme.New()}); err != nil {
		b.Fatal(err)
	}
	if r.hc, err = rest.HTTPClientFor(r.cfg); err != nil {
		b.Fatal(err)
	}
	return r
}

func (r *rig) startController() {
	ctl, err := startControllerProcess(r.cp, nil)
	if err != nil {
		r.b.Fatal(err)
	}
	r.ctl = ctl
}

// namespace is the namespace a scenario runs in.
func namespace(scenario string) string { return "bench-" + scenario }

// measure runs setup (if any), then create, in a fresh namespace and returns the time
// from the start of create until the namespace holds want pods, as seen by a watch
// started before create.
func (r *rig) measure(name string, setup, create func(ns string) error, want int) time.Duration {
	b, c, cfg := r.b, r.c, r.cfg
	b.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace(name)}}
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
	r.settle()
	cpuBefore := cpuSeconds()
	requestsBefore := r.requestCounts()
	stopProfile := profileAPIServer(b, cfg, r.ctl, name)
	defer stopProfile()
	start := time.Now()
	// Five minutes, and 30 ms a pod more: a busy machine takes 15 ms a pod.
	limit := 5*time.Minute + time.Duration(want)*30*time.Millisecond
	timeout := time.After(limit)
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
		case <-timeout:
			b.Fatalf("%s: %d pods not seen within %v", name, want, limit)
		}
	}
	elapsed := time.Since(start)
	// Printed rather than logged: a benchmark's log keeps only its first lines.
	fmt.Printf("%s: %d pods in %.2fs\n  CPU seconds meanwhile: %s\n  writes meanwhile: %s\n", name, want, elapsed.Seconds(),
		cpuDelta(cpuBefore, cpuSeconds()), requestDelta(requestsBefore, r.requestCounts()))
	return elapsed
}
