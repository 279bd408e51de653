package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
	"github.com/tfk8s/tfk8s/internal/tfconfig"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// The TensorFlow jobs' cluster has its own network, apart from the other suites'.
const (
	tfBridge  = "tfk8se2e2"
	tfPodCIDR = "10.247.0.0/24"
	// tfWait bounds every wait for a TensorFlow job: six TensorFlow processes share two
	// cores, and each takes seconds to import TensorFlow.
	tfWait = 5 * time.Minute
	// psCluster is the cluster every task of a ParameterServerStrategy job must see.
	psCluster = `{"chief": 1, "ps": 2, "worker": 3}`
)

// TestTensorFlowJobs trains examples/tensorflow with real TensorFlow in the TensorFlow
// image on a local cluster of its own: the pods pull the image from the cluster's
// registry, TensorFlow forms its cluster from the TF_CONFIG tfk8s gives it, a killed
// worker costs the job nothing, and a killed chief resumes from its last checkpoint.
//
// The controller runs with --compact-tf-config-above=0: every pod of a job under the
// agent carries the job's cluster (TFK8S_CLUSTER), as the pods of a job of thousands of
// replicas do, and every TensorFlow program runs on the TF_CONFIG the agent composed
// from it.
//
// Last, it runs the README's tour as written (testTour), then a job in the CUDA image
// on this host without a GPU (testGPUJob).
func TestTensorFlowJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(binDir, "tfk8s-nodeinit")) {
		t.Fatalf("no tfk8s-node in %s: training jobs need a node (make build)", binDir)
	}
	if !fileExists(filepath.Join(binDir, "..", "_out", "images", "tensorflow", "index.json")) {
		t.Fatalf("no TensorFlow image in %s/../_out/images: make tensorflow-image", binDir)
	}
	if !fileExists(filepath.Join(binDir, "..", "_out", "images", "tensorflow-gpu", "index.json")) {
		t.Fatalf("no CUDA image in %s/../_out/images, which a job runs in last: make tensorflow-gpu-image", binDir)
	}
	if !fileExists(filepath.Join(binDir, "..", "_out", "images", "jupyter", "index.json")) {
		t.Fatalf("no Jupyter image in %s/../_out/images, which the tour's notebook runs: make tensorflow-image", binDir)
	}
	if matches, _ := filepath.Glob(filepath.Join(binDir, "..", "_out", "python-wheels", "hatchling-*.whl")); len(matches) == 0 {
		t.Fatalf("no hatchling wheel in %s/../_out/python-wheels, which the tour's pip install python/ builds with: make python-wheels", binDir)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-tensorflow-node",
		PodCIDR:  tfPodCIDR,
		Bridge:   tfBridge,
		// Every TensorFlow job here runs under the agent (--artifacts).
		CompactTFConfigAbove: ptr.To(0),
	}, func() {
		if left := leftNetwork(tfBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)
	c.wait = tfWait

	t.Run("ParameterServerStrategy trains", func(t *testing.T) { testParameterServerStrategy(ctx, t, c) })
	// The CUDA image goes into the registry now, beside the next jobs, and after the
	// first pull of the TensorFlow image: beside it, that pull took 39.5 s, not 23-30.
	gpu := startGPULoad(ctx, t, opts, binDir)
	t.Run("a killed worker costs nothing", func(t *testing.T) { testTensorFlowKilledWorker(ctx, t, c) })
	t.Run("a killed chief resumes from its checkpoint", func(t *testing.T) { testTensorFlowKilledChief(ctx, t, c) })
	t.Run("MultiWorkerMirroredStrategy trains", func(t *testing.T) { testMultiWorkerMirrored(ctx, t, c) })
	t.Run("kubectl shows its progress", func(t *testing.T) { testProgress(ctx, t, c, opts.Ports.ControllerMetrics) })
	t.Run("volumes are shared by the replicas", func(t *testing.T) { testVolumes(ctx, t, c) })
	t.Run("TensorBoard follows the job", func(t *testing.T) { testTensorBoard(ctx, t, c) })
	// After the others: the tour leaves a notebook and two TensorBoards' worth of jobs behind.
	t.Run("the README's tour runs as written", func(t *testing.T) { testTour(ctx, t, c, binDir) })
	// After the tour, just before down: the unpacked CUDA image's 11 GB on the node
	// are held the least time.
	t.Run("a job in the CUDA image runs on the CPU", func(t *testing.T) { testGPUJob(ctx, t, c, gpu) })
}

// submitPS submits examples/tensorflow/ps_strategy.py with 2 PS, 3 workers and a chief.
func submitPS(ctx context.Context, t *testing.T, c *jobsCluster, name string, epochs int) {
	t.Helper()
	c.mustTfk8s(ctx, t, "submit", "../../examples/tensorflow", "--name", name, "--image", images.TensorFlow,
		"--ps", "2", "--workers", "3", "--chief", "--artifacts", "checkpoints",
		"--", "python3", "ps_strategy.py", "--epochs", strconv.Itoa(epochs), "--steps-per-epoch", "20",
		"--model-dir", "/workspace/checkpoints")
}

// checkProgress checks that describe shows the progress the chief's agent read from
// the summaries of Keras' TensorBoard callback: a step past the first, and a loss.
func checkProgress(ctx context.Context, t *testing.T, c *jobsCluster, name string) {
	r := c.mustTfk8s(ctx, t, "describe", name)
	progress := regexp.MustCompile(`(?m)^Progress:\n\s+Step:\s+(\d+) \(from chief-0's summaries\)\n\s+Loss:\s+\S+ \(logs/train/epoch_loss at step \d+\)\n`)
	m := progress.FindStringSubmatch(r.stdout)
	if m == nil || m[1] == "0" {
		t.Errorf("describe %s shows no progress past step 0 from chief-0:\n%s", name, r.stdout)
		return
	}
	t.Logf("describe %s: step %s", name, m[1])
}

func testParameterServerStrategy(ctx context.Context, t *testing.T, c *jobsCluster) {
	start := time.Now()
	submitPS(ctx, t, c, "ps", 3)
	if err := c.waitAllRunning(ctx, "ps", 6, 50*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	t.Logf("submit → every replica Running: %.2f s (the image pulled and unpacked unless the node's cache had it)", time.Since(start).Seconds())
	job := c.waitFinished(ctx, t, "ps")
	t.Logf("ps %s %.1f s after submit", job.Status.State, time.Since(start).Seconds())
	logs := c.tfk8s(ctx, "logs", "ps")
	if job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("ps state %s, want Succeeded: %+v\nlogs:\n%s", job.Status.State, job.Status.Conditions, logs)
	}
	// TensorFlow's own view: every server started in the cluster TF_CONFIG describes,
	// and the chief's coordinator reached all of them.
	want := []string{
		"[chief] cluster " + psCluster,
		"[chief] coordinator connected: 3 workers, 2 parameter servers",
		"[chief] starting from step 0",
	}
	for _, task := range []string{"ps 0", "ps 1", "worker 0", "worker 1", "worker 2"} {
		want = append(want, "["+task+"] server started at grpc://")
	}
	for _, w := range want {
		if !strings.Contains(logs.stdout, w) {
			t.Errorf("the job's logs lack %q:\n%s\ntfk8s logs said on stderr:\n%s", w, logs.stdout, logs.stderr)
		}
	}
	checkFinished(t, logs.stdout, 60)
	if n := strings.Count(logs.stdout, "in cluster "+psCluster); n != 5 {
		t.Errorf("%d servers saw the cluster %s, want 5:\n%s", n, psCluster, logs.stdout)
	}
	ls := c.mustTfk8s(ctx, t, "artifacts", "ls", "ps")
	for _, w := range []string{"chief-0/artifacts/workspace/checkpoints/ckpt-3.index", "chief-0/artifacts/workspace/checkpoints/logs/train/events.out.tfevents."} {
		if !strings.Contains(ls.stdout, w) {
			t.Errorf("artifacts ls ps lacks %s:\n%s", w, ls.stdout)
		}
	}
	// The checkpoints sit where --model-dir and --artifacts name them, one level down.
	if strings.Contains(ls.stdout, "checkpoints/checkpoints/") {
		t.Errorf("artifacts ls ps shows checkpoints/checkpoints/, want the checkpoints in workspace/checkpoints/:\n%s", ls.stdout)
	}
	t.Run("describe shows its progress", func(t *testing.T) { checkProgress(ctx, t, c, "ps") })
	c.mustTfk8s(ctx, t, "delete", "ps", "--wait")

	// With the image cached, the same job starts as fast as the API allows.
	start = time.Now()
	submitPS(ctx, t, c, "ps-cached", 1)
	if err := c.waitAllRunning(ctx, "ps-cached", 6, 20*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	t.Logf("submit → every replica Running, image cached: %.2f s", time.Since(start).Seconds())
	c.mustTfk8s(ctx, t, "delete", "ps-cached", "--wait")
}

// chiefSaved matches the chief's line once an epoch's checkpoint is saved, "[chief]
// epoch 2 saved in /workspace/checkpoints/ckpt-2".
var chiefSaved = regexp.MustCompile(`\[chief\] epoch (\d+) saved in `)

// waitChiefEpoch waits until the chief of the job has saved the checkpoint of an epoch
// of at least epoch.
func waitChiefEpoch(ctx context.Context, t *testing.T, c *jobsCluster, job string, chief corev1.Pod, epoch int) {
	t.Helper()
	c.eventually(ctx, t, fmt.Sprintf("%s's chief at epoch %d", job, epoch), func() (bool, error) {
		if s := c.jobState(ctx, job); s == tfv1.JobSucceeded || s == tfv1.JobFailed {
			t.Fatalf("%s %s before its chief reached epoch %d; logs:\n%s", job, s, epoch, c.tfk8s(ctx, "logs", job))
		}
		logs, err := c.cs.CoreV1().Pods(chief.Namespace).GetLogs(chief.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err
		}
		for _, m := range chiefSaved.FindAllStringSubmatch(string(logs), -1) {
			if n, _ := strconv.Atoi(m[1]); n >= epoch {
				return true, nil
			}
		}
		return false, nil
	})
}

// killProgram SIGKILLs the Python program of a replica's pod.
func killProgram(t *testing.T, pod corev1.Pod, script string) {
	t.Helper()
	pid, err := programPID(string(pod.UID), script)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing %s of %s (pod %s), pid %d", script, pod.Name, pod.UID, pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// waitSucceeded waits for the job to finish and wants it Succeeded, with its logs if not.
func waitSucceeded(ctx context.Context, t *testing.T, c *jobsCluster, name string) (*tfv1.TFJob, string) {
	t.Helper()
	job := c.waitFinished(ctx, t, name)
	logs := c.tfk8s(ctx, "logs", name)
	if job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("%s state %s, want Succeeded: %+v\nlogs:\n%s", name, job.Status.State, job.Status.Conditions, logs)
	}
	return job, logs.stdout
}

func testTensorFlowKilledWorker(ctx context.Context, t *testing.T, c *jobsCluster) {
	submitPS(ctx, t, c, "ps-worker", 6)
	defer c.tfk8s(ctx, "delete", "ps-worker")
	if err := c.waitAllRunning(ctx, "ps-worker", 6, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	waitChiefEpoch(ctx, t, c, "ps-worker", c.pod(ctx, t, "ps-worker", "chief", 0), 1)
	// Every program is running: the chief is training, the servers serve it.
	checkComposedTFConfig(ctx, t, c, "ps-worker", "ps_strategy.py")
	worker := c.pod(ctx, t, "ps-worker", "worker", 1)
	killProgram(t, worker, "ps_strategy.py")
	job, logs := waitSucceeded(ctx, t, c, "ps-worker")
	// The failure is recorded. The coordinator gives the lost worker's steps to the
	// others, so the chief may finish before the worker's restart (the kubelet waits
	// 10 s before restarting a container): one restart at most.
	rs := job.Status.ReplicaStatuses[tfv1.ReplicaTypeWorker]
	switch {
	case rs == nil || rs.LastFailure == nil:
		t.Errorf("worker status %+v, want the killed worker's failure recorded", rs)
	case rs.LastFailure.Index != 1 || rs.LastFailure.ExitCode != 137 || rs.Restarts > 1:
		t.Errorf("worker status %+v, last failure %+v; want worker 1's exit code 137 and at most 1 restart", rs, rs.LastFailure)
	default:
		t.Logf("worker 1 killed: exit code %d recorded, %d restarts before the chief finished", rs.LastFailure.ExitCode, rs.Restarts)
	}
	checkFinished(t, logs, 120)
}

// finishedAt matches the chief's last line, "[chief] training finished at step 120".
var finishedAt = regexp.MustCompile(`\[chief\] training finished at step (\d+)`)

// checkFinished wants the chief to have trained at least steps steps. More is right:
// the coordinator runs again the steps a lost worker was running, and some of them may
// have been applied before it was lost.
func checkFinished(t *testing.T, logs string, steps int) {
	t.Helper()
	m := finishedAt.FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("the chief did not finish:\n%s", logs)
	}
	if n, _ := strconv.Atoi(m[1]); n < steps {
		t.Errorf("the chief finished at step %d, want ≥ %d:\n%s", n, steps, logs)
	}
	t.Logf("%s", m[0])
}

func testTensorFlowKilledChief(ctx context.Context, t *testing.T, c *jobsCluster) {
	submitPS(ctx, t, c, "ps-chief", 6)
	defer c.tfk8s(ctx, "delete", "ps-chief")
	if err := c.waitAllRunning(ctx, "ps-chief", 6, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	chief := c.pod(ctx, t, "ps-chief", "chief", 0)
	waitChiefEpoch(ctx, t, c, "ps-chief", chief, 3)
	killProgram(t, chief, "ps_strategy.py")
	job, logs := waitSucceeded(ctx, t, c, "ps-chief")
	if rs := job.Status.ReplicaStatuses[tfv1.ReplicaTypeChief]; rs == nil || rs.Restarts != 1 {
		t.Errorf("chief status %+v, want 1 restart", rs)
	}
	// The second chief restored the first one's backups from S3 and went on from the
	// last epoch they hold, not from step 0.
	resumed := regexp.MustCompile(`\[chief\] resuming from step (\d+) \(epoch (\d+)\)`).FindStringSubmatch(logs)
	if resumed == nil {
		t.Fatalf("the restarted chief did not resume from a checkpoint:\n%s", logs)
	}
	if epoch, _ := strconv.Atoi(resumed[2]); epoch < 3 {
		t.Errorf("the chief resumed from epoch %d, want ≥ 3 (it was killed once it had saved epoch 3):\n%s", epoch, logs)
	}
	t.Logf("the restarted chief: %s", resumed[0])
	checkFinished(t, logs, 120)
}

func testMultiWorkerMirrored(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "../../examples/tensorflow", "--name", "mwms", "--image", images.TensorFlow,
		"--workers", "3", "--artifacts", "checkpoints",
		"--", "python3", "multi_worker_mirrored.py", "--epochs", "3", "--steps-per-epoch", "10",
		"--model-dir", "/workspace/checkpoints")
	defer c.tfk8s(ctx, "delete", "mwms")
	_, logs := waitSucceeded(ctx, t, c, "mwms")
	for i := range 3 {
		w := fmt.Sprintf(`[worker %d] joined the cluster {"worker": 3}: 3 replicas in sync`, i)
		if !strings.Contains(logs, w) {
			t.Errorf("the job's logs lack %q:\n%s", w, logs)
		}
	}
	if !strings.Contains(logs, "[worker 0] saved the model to /workspace/checkpoints/model") {
		t.Errorf("worker 0 did not save the model:\n%s", logs)
	}
}

// checkComposedTFConfig checks every replica of a running job whose programs run on a
// TF_CONFIG the agent composed: the pod carries the cluster (TFK8S_CLUSTER) and no
// TF_CONFIG, and the TF_CONFIG in the environment of its program (script) is, byte for
// byte, what tfk8s describe shows for the replica and what the controller gives that
// replica when its pod carries TF_CONFIG itself.
func checkComposedTFConfig(ctx context.Context, t *testing.T, c *jobsCluster, name, script string) {
	t.Helper()
	job := c.job(ctx, t, name)
	var first string
	for _, rt := range tfv1.ReplicaTypes {
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			replica := tfjob.ReplicaName(rt, i)
			pod := c.pod(ctx, t, name, tfjob.TaskType(rt), int(i))
			carried := map[string]bool{}
			for _, e := range tfjob.TensorFlowContainer(pod.Spec.Containers).Env {
				carried[e.Name] = true
			}
			if !carried[tfconfig.EnvCluster] || carried[tfjob.EnvTFConfig] {
				t.Errorf("%s: the pod carries %s %v and TF_CONFIG %v; want the cluster alone", replica,
					tfconfig.EnvCluster, carried[tfconfig.EnvCluster], carried[tfjob.EnvTFConfig])
			}
			want, err := controller.NewTFConfigs(job, controller.AddressOptions{ClusterDomain: localcluster.DefaultClusterDomain}, controller.DefaultCompactTFConfigAbove).For(rt, i)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{
				"the program": programTFConfig(t, pod, script),
				"describe":    describedTFConfig(ctx, t, c, name, replica),
			}
			for who, tfConfig := range got {
				if tfConfig != want {
					t.Errorf("%s: %s sees TF_CONFIG\n%s\nthe controller gives\n%s", replica, who, tfConfig, want)
				}
			}
			if first == "" {
				first = replica + "'s, " + strconv.Itoa(len(got["the program"])) + " bytes: " + got["the program"]
			}
		}
	}
	t.Logf("the programs of %s run on the TF_CONFIG the agent composed, equal to what describe shows; %s", name, first)
}

// programTFConfig is TF_CONFIG in the environment of the program script runs in pod,
// which must not see the cluster the agent composed it from.
func programTFConfig(t *testing.T, pod corev1.Pod, script string) string {
	t.Helper()
	pid, err := programPID(string(pod.UID), script)
	if err != nil {
		t.Fatal(err)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tfConfig string
	for _, kv := range strings.Split(string(environ), "\x00") {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case tfjob.EnvTFConfig:
			tfConfig = value
		case tfconfig.EnvCluster:
			t.Errorf("the program of %s sees %s", pod.Name, tfconfig.EnvCluster)
		}
	}
	return tfConfig
}

// describedTFConfig is the TF_CONFIG tfk8s describe shows for a replica, indented for
// reading, compacted back.
func describedTFConfig(ctx context.Context, t *testing.T, c *jobsCluster, name, replica string) string {
	t.Helper()
	out := c.mustTfk8s(ctx, t, "describe", name, "--replica", replica).stdout
	_, after, ok := strings.Cut(out, "TF_CONFIG ("+replica+"):\n")
	if !ok {
		t.Fatalf("tfk8s describe %s --replica %s shows no TF_CONFIG:\n%s", name, replica, out)
	}
	var value json.RawMessage
	if err := json.NewDecoder(strings.NewReader(after)).Decode(&value); err != nil {
		t.Fatalf("tfk8s describe %s --replica %s: reading its TF_CONFIG: %v\n%s", name, replica, err, out)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		t.Fatal(err)
	}
	return compact.String()
}
