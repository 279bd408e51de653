package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// The scheduling tests' cluster: two nodes of two fake GPUs each, on networks of their
// own. The second node's bridge and network follow from the first's.
const (
	schedNodeName = "e2e-sched"
	schedBridge   = "tfk8se6"
	schedPodCIDR  = "10.239.0.0/24"
	schedGPUs     = 2
)

// schedScript is every job's program. Its first argument says what it does:
//
//	mesh     every worker listens on its TF_CONFIG port, connects to every other
//	         worker's, and exits once each has connected to it: traffic between pods,
//	         across nodes, by the names of the cluster's DNS
//	wait URL exits once URL answers 200: the test's release
//	done     exits at once
//	hold     runs until stopped
//
// Each first prints the GPUs the node gave it, and the variables DRA drivers set.
const schedScript = `import json, os, signal, socket, sys, threading, time, urllib.request
print("gpus", os.environ.get("NVIDIA_VISIBLE_DEVICES", "none"), flush=True)
print("claims", " ".join(sorted(k for k in os.environ if k.startswith("claim_"))) or "none", flush=True)
mode = sys.argv[1]
deadline = time.time() + 90
if mode == "done":
    sys.exit(0)
if mode == "hold":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(1)
if mode == "wait":
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(sys.argv[2], timeout=2).status == 200:
                print("released", flush=True)
                sys.exit(0)
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("never released")
cfg = json.loads(os.environ["TF_CONFIG"])
me, workers = cfg["task"]["index"], cfg["cluster"]["worker"]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", int(workers[me].rsplit(":", 1)[1])))
srv.listen(16)
heard = set()
def serve():
    while True:
        c, _ = srv.accept()
        heard.add(c.recv(16).decode())
        c.close()
threading.Thread(target=serve, daemon=True).start()
for i, addr in enumerate(workers):
    if i == me:
        continue
    host, port = addr.rsplit(":", 1)
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=2).sendall(str(me).encode())
            print("reached", addr, flush=True)
            break
        except OSError as e:
            if time.time() > deadline:
                sys.exit("cannot reach %s: %s" % (addr, e))
            time.sleep(0.2)
while len(heard) < len(workers) - 1:
    if time.time() > deadline:
        sys.exit("heard only from %s" % sorted(heard))
    time.sleep(0.1)
print("mesh done", flush=True)
`

// schedManifest keeps a job's pods when it finishes, so that where they ran stays to
// be seen, and sets the scheduling policy it is given, if any. The job succeeds
// once every worker has, not worker 0 alone: a mesh has succeeded when each worker
// has reached every other, and the test reads each one's log after that.
const schedManifest = `apiVersion: tfk8s.io/v1alpha1
kind: TFJob
metadata:
  name: %s
spec:
  successPolicy: AllWorkers
  runPolicy:
    cleanPodPolicy: None
%s  tfReplicaSpecs:
    Worker:
      replicas: 1
      template: {spec: {terminationGracePeriodSeconds: 5, containers: [{name: tensorflow}]}}
`

// TestScheduling runs jobs on a local cluster of two nodes with two fake GPUs each,
// under the real kube-scheduler with the native gang scheduling gates on: GPU workers
// spread two per node with distinct GPUs and reaching each other across nodes; a gang
// that does not fit binds no pod until capacity appears; two gangs that fit only one
// at a time run one after the other.
func TestScheduling(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir: binDir, NodeName: schedNodeName, PodCIDR: schedPodCIDR, Bridge: schedBridge,
		Nodes: 2, GPUs: schedGPUs, DRAGPUs: schedDRAGPUs,
	}, func() {
		if left := leftNetwork(schedBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := &schedCluster{jobsCluster: newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir), code: t.TempDir()}
	if err := os.WriteFile(filepath.Join(c.code, "sched.py"), []byte(schedScript), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("two nodes, each with its GPUs, listed and kept by up", func(t *testing.T) { testTwoNodes(ctx, t, c, opts) })
	t.Run("GPU workers spread over the nodes and reach each other", func(t *testing.T) { testGPUWorkersSpread(ctx, t, c) })
	t.Run("a gang that does not fit binds nothing until capacity appears", func(t *testing.T) { testGangWaitsForCapacity(ctx, t, c) })
	t.Run("two gangs that fit one at a time never deadlock", func(t *testing.T) { testGangsTakeTurns(ctx, t, c) })
	t.Run("minAvailable with no provider is a native gang by default", func(t *testing.T) { testDefaultGangMinAvailable(ctx, t, c) })
	t.Run("DRA workers get distinct simulated GPUs; a fifth waits; a gang binds all or none", func(t *testing.T) { testDRADistinctDevices(ctx, t, c) })
}

// schedCluster is the test's cluster and the directory of the jobs' code.
type schedCluster struct {
	*jobsCluster
	code string
}

// submit submits a job of workers replicas of gpus GPUs each, running the script with
// args, through the CLI; gang asks for the native gang scheduler.
func (c *schedCluster) submit(ctx context.Context, t *testing.T, name string, workers, gpus int, gang bool, args ...string) {
	t.Helper()
	policy := ""
	if gang {
		policy = "{provider: native}"
	}
	c.submitWithPolicy(ctx, t, name, workers, gpus, policy, args...)
}

// submitWithPolicy is submit with runPolicy.schedulingPolicy given as YAML, or none.
func (c *schedCluster) submitWithPolicy(ctx context.Context, t *testing.T, name string, workers, gpus int, schedulingPolicy string, args ...string) {
	t.Helper()
	c.submitWithFlags(ctx, t, name, schedulingPolicy, []string{"--workers", strconv.Itoa(workers), "--gpus", strconv.Itoa(gpus)}, args...)
}

// submitWithFlags submits schedManifest with runPolicy.schedulingPolicy given as YAML,
// or none, and submit's flags, running the script with args.
func (c *schedCluster) submitWithFlags(ctx context.Context, t *testing.T, name, schedulingPolicy string, flags []string, args ...string) {
	t.Helper()
	policy := ""
	if schedulingPolicy != "" {
		policy = "    schedulingPolicy: " + schedulingPolicy + "\n"
	}
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(schedManifest, name, policy)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := append([]string{"submit", c.code, "-f", manifest, "--image", images.Python}, flags...)
	c.mustTfk8s(ctx, t, append(append(cmd, "--", "python3", "sched.py"), args...)...)
}

// waitAllBound waits until the scheduler has bound each of the job's n pods.
func (c *schedCluster) waitAllBound(ctx context.Context, t *testing.T, job string, n int) {
	t.Helper()
	c.eventually(ctx, t, "every pod of "+job+" bound", func() (bool, error) {
		ps, err := c.pods(ctx, job)
		bound, _ := podsBound(ps)
		return bound == n, err
	})
}

func testTwoNodes(ctx context.Context, t *testing.T, c *schedCluster, opts localcluster.Options) {
	for _, name := range []string{schedNodeName, schedNodeName + "-2"} {
		checkNodeReady(ctx, t, c.kubeconfig, name)
		node, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if gpus := node.Status.Allocatable["nvidia.com/gpu"]; gpus.Value() != schedGPUs {
			t.Errorf("node %s has %s GPUs allocatable, want %d", name, gpus.String(), schedGPUs)
		}
	}
	st, err := localcluster.StatusOf(localcluster.Options{Dir: opts.Dir})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	st.Print(&out)
	// Each node's kubelet API listens on the node's own address on the bridge.
	for _, want := range []string{"tfk8s-node ", "10.239.0.2:", "tfk8s-node-2 ", "10.239.0.3:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("local status lacks %q:\n%s", want, out.String())
		}
	}
	before := pidsOf(st)
	again, err := localcluster.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up again: %v", err)
	}
	if after := pidsOf(again); !equalMaps(before, after) || after["tfk8s-node-2"] == 0 {
		t.Errorf("up again restarted components: before %v, after %v", before, after)
	}
	more := opts
	more.Nodes = 3
	_, err = localcluster.Up(ctx, more)
	if err == nil || !strings.Contains(err.Error(), "--nodes is 2, not 3") || !strings.Contains(err.Error(), "run tfk8s local down first") {
		t.Errorf("up --nodes 3 on the running 2-node cluster: error %v, want a refusal naming --nodes", err)
	}
}

func testGPUWorkersSpread(ctx context.Context, t *testing.T, c *schedCluster) {
	start := time.Now()
	c.submit(ctx, t, "mesh", 4, 1, false, "mesh")
	if err := c.waitAllRunning(ctx, "mesh", 4, 50*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	t.Logf("submit → 4 GPU workers Running: %.2f s", time.Since(start).Seconds())
	job := c.waitFinished(ctx, t, "mesh")
	t.Logf("mesh %s %.2f s after submit", job.Status.State, time.Since(start).Seconds())
	ps, err := c.pods(ctx, "mesh")
	if err != nil {
		t.Fatal(err)
	}
	gpusByNode := map[string][]string{}
	for _, p := range ps {
		logs, err := c.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of %s: %v", p.Name, err)
		}
		t.Logf("%s on %s:\n%s", p.Name, p.Spec.NodeName, logs)
		gpusByNode[p.Spec.NodeName] = append(gpusByNode[p.Spec.NodeName], printedGPUs(string(logs)))
		if !strings.Contains(string(logs), "mesh done") {
			t.Errorf("%s did not reach every other worker", p.Name)
		}
	}
	if job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("mesh state %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	for _, gpus := range gpusByNode {
		slices.Sort(gpus)
	}
	want := map[string][]string{schedNodeName: {"0", "1"}, schedNodeName + "-2": {"0", "1"}}
	if fmt.Sprint(want) != fmt.Sprint(gpusByNode) {
		t.Errorf("GPU indices by node = %v, want each node's two GPUs to two workers: %v", gpusByNode, want)
	}
}

// printedGPUs is what the script printed after "gpus ", or "".
func printedGPUs(logs string) string {
	for line := range strings.Lines(logs) {
		if gpus, ok := strings.CutPrefix(strings.TrimSpace(line), "gpus "); ok {
			return gpus
		}
	}
	return ""
}

// podsBound counts the job's pods the scheduler has bound to a node, and those it
// reports it could not place (PodScheduled False).
func podsBound(ps []corev1.Pod) (bound, unschedulable int) {
	for _, p := range ps {
		if p.Spec.NodeName != "" {
			bound++
			continue
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				unschedulable++
			}
		}
	}
	return bound, unschedulable
}

// waitGangRefused waits until the scheduler reports each of the job's n pods
// unschedulable, and wants none bound then.
func (c *schedCluster) waitGangRefused(ctx context.Context, t *testing.T, job string, n int) {
	t.Helper()
	var bound int
	c.eventually(ctx, t, fmt.Sprintf("the scheduler to report the %d pods of %s unschedulable", n, job), func() (bool, error) {
		ps, err := c.pods(ctx, job)
		if err != nil {
			return false, err
		}
		var unschedulable int
		bound, unschedulable = podsBound(ps)
		return len(ps) == n && (unschedulable == n || bound > 0), nil
	})
	if bound > 0 {
		c.fail(t, "%d of the %d pods of gang %s bound though the gang does not fit", bound, n, job)
	}
}

func testGangWaitsForCapacity(ctx context.Context, t *testing.T, c *schedCluster) {
	c.submit(ctx, t, "holder", 1, 2, false, "hold")
	if err := c.waitAllRunning(ctx, "holder", 1, 50*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	// 4 GPUs wanted, 2 free: without a gang, two workers would bind and hold them.
	c.submit(ctx, t, "gang", 4, 1, true, "done")
	c.checkGangWaitsFor(ctx, t, "gang", 4, "holder")
}

// checkGangWaitsFor: the gang just submitted, of n pods, binds none while the job
// holder holds what it needs, and all n once holder is deleted; then it succeeds, and
// goes. The GPU and the DRA gangs take the same steps.
func (c *schedCluster) checkGangWaitsFor(ctx context.Context, t *testing.T, gang string, n int, holder string) {
	t.Helper()
	c.waitGangRefused(ctx, t, gang, n)
	t.Logf("gang %s while %s runs: 0 of %d pods bound, all %d reported unschedulable", gang, holder, n, n)
	freed := time.Now()
	c.mustTfk8s(ctx, t, "delete", holder)
	c.waitAllBound(ctx, t, gang, n)
	t.Logf("%s deleted → the %d pods of gang %s bound: %.2f s", holder, n, gang, time.Since(freed).Seconds())
	if job := c.waitFinished(ctx, t, gang); job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("%s state %s, want Succeeded: %+v", gang, job.Status.State, job.Status.Conditions)
	}
	c.mustTfk8s(ctx, t, "delete", gang)
}

// testDefaultGangMinAvailable: the cluster was started with no flag about gangs, and a
// job that names no provider but sets minAvailable (as a Kubeflow manifest does) gets
// a native PodGroup of that minimum. 4 GPU workers, minAvailable 3, 2 GPUs free: none
// binds (one by one, two would, and hold their GPUs); once 4 are free, all run.
func testDefaultGangMinAvailable(ctx context.Context, t *testing.T, c *schedCluster) {
	c.submit(ctx, t, "holder", 1, 2, false, "hold")
	if err := c.waitAllRunning(ctx, "holder", 1, 50*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	c.submitWithPolicy(ctx, t, "least", 4, 1, "{minAvailable: 3}", "done")
	c.waitGangRefused(ctx, t, "least", 4)
	// Kubernetes 1.37 serves PodGroups as v1beta1, which the API types tfk8s builds
	// against do not have: the object is read as JSON.
	raw, err := c.cs.CoreV1().RESTClient().Get().AbsPath("/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/least").DoRaw(ctx)
	if err != nil {
		c.fail(t, "the job's native PodGroup: %v", err)
	}
	var group struct {
		Spec struct {
			SchedulingPolicy struct {
				Gang *struct {
					MinCount int32 `json:"minCount"`
				} `json:"gang"`
			} `json:"schedulingPolicy"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &group); err != nil {
		c.fail(t, "the job's native PodGroup: %v: %s", err, raw)
	}
	if gang := group.Spec.SchedulingPolicy.Gang; gang == nil || gang.MinCount != 3 {
		t.Errorf("PodGroup least: %s, want schedulingPolicy.gang.minCount 3 from minAvailable", raw)
	}
	t.Logf("minAvailable 3, no provider, 2 GPUs free: 0 of 4 pods bound, all 4 reported unschedulable")
	c.mustTfk8s(ctx, t, "delete", "holder")
	job := c.waitFinished(ctx, t, "least")
	if job.Status.State != tfv1.JobSucceeded {
		t.Errorf("least state %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	for _, cond := range job.Status.Conditions {
		if cond.Type == string(tfv1.JobFieldsIgnored) {
			t.Errorf("condition %s: %s; want none: local mode's controller honours minAvailable", cond.Type, cond.Message)
		}
	}
	c.mustTfk8s(ctx, t, "delete", "least")
}

// turns are two gangs of 3 GPU workers each, on 4 GPUs: either fits alone, not both.
var turns = []string{"turn-a", "turn-b"}

func testGangsTakeTurns(ctx context.Context, t *testing.T, c *schedCluster) {
	url, release := startRelease(t)
	for _, name := range turns {
		c.submit(ctx, t, name, 3, 1, true, "wait", url)
	}
	start := time.Now()
	first, observations := "", 0
	var released, secondBound time.Time
	c.eventually(ctx, t, "both gangs finished, one after the other", func() (bool, error) {
		obs, err := c.observeTurns(ctx)
		if err != nil {
			return false, err
		}
		observations++
		if obs.partial(turns[0]) && obs.partial(turns[1]) {
			c.fail(t, "both gangs partly bound, neither can run: %v", obs.bound)
		}
		if first == "" {
			// Hold the first gang until the scheduler has refused the whole second.
			first = obs.placedWhileOtherRefused()
			if first != "" {
				t.Logf("%s bound (3/3), the other refused (0/3) %.2f s after submit: released", first, time.Since(start).Seconds())
				release()
				released = time.Now()
			}
			return false, nil
		}
		if second := turns[0]; secondBound.IsZero() {
			if first == second {
				second = turns[1]
			}
			if obs.bound[second] == 3 {
				secondBound = time.Now()
			}
		}
		return obs.finished[turns[0]] && obs.finished[turns[1]], nil
	})
	t.Logf("release → the other gang bound: %.2f s; both gangs finished %.2f s after submit, %d observations, never both partly bound",
		secondBound.Sub(released).Seconds(), time.Since(start).Seconds(), observations)
	for _, name := range turns {
		if job := c.job(ctx, t, name); job.Status.State != tfv1.JobSucceeded {
			t.Errorf("%s state %s, want Succeeded: %+v", name, job.Status.State, job.Status.Conditions)
		}
	}
}

// turnsObservation is one look at both gangs' pods, from a single list.
type turnsObservation struct {
	bound, unschedulable, pods map[string]int
	finished                   map[string]bool
}

// partial reports whether some of the gang's pods are bound, not all.
func (o turnsObservation) partial(job string) bool { return o.bound[job] > 0 && o.bound[job] < 3 }

// placedWhileOtherRefused names the gang all of whose pods are bound while the
// scheduler reports every pod of the other unschedulable, or "".
func (o turnsObservation) placedWhileOtherRefused() string {
	for i, name := range turns {
		other := turns[1-i]
		if o.bound[name] == 3 && o.pods[other] == 3 && o.bound[other] == 0 && o.unschedulable[other] == 3 {
			return name
		}
	}
	return ""
}

// observeTurns lists both gangs' pods at once, so that the counts of one moment are
// compared.
func (c *schedCluster) observeTurns(ctx context.Context) (turnsObservation, error) {
	list, err := c.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
		LabelSelector: tfv1.LabelJobName + " in (" + strings.Join(turns, ",") + ")",
	})
	if err != nil {
		return turnsObservation{}, err
	}
	o := turnsObservation{bound: map[string]int{}, unschedulable: map[string]int{}, pods: map[string]int{}, finished: map[string]bool{}}
	byJob := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		byJob[p.Labels[tfv1.LabelJobName]] = append(byJob[p.Labels[tfv1.LabelJobName]], p)
	}
	for _, name := range turns {
		o.pods[name] = len(byJob[name])
		o.bound[name], o.unschedulable[name] = podsBound(byJob[name])
		s := c.jobState(ctx, name)
		o.finished[name] = s == tfv1.JobSucceeded || s == tfv1.JobFailed
	}
	return o, nil
}
