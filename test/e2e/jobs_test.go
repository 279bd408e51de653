package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controlplane"
	"github.com/tfk8s/tfk8s/internal/images"
	"github.com/tfk8s/tfk8s/internal/localcluster"
)

// The training jobs' cluster has its own network, apart from TestLocalCluster's.
const (
	jobsBridge  = "tfk8se2e1"
	jobsPodCIDR = "10.248.0.0/24"
	jobsImage   = images.Python
	// jobsWait bounds every wait for a job or its pods.
	jobsWait = 90 * time.Second
)

// TestTrainingJobs runs training jobs on a local cluster of its own, through the
// tfk8s CLI run in-process: the demo, a worker killed and re-created, a worker that
// fails the job, suspend and resume, and logs and exec through the API server.
func TestTrainingJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(binDir, "tfk8s-nodeinit")) {
		t.Fatalf("no tfk8s-nodeinit in %s: training jobs need a node (make build)", binDir)
	}
	opts, st := upForTest(ctx, t, localcluster.Options{
		BinDir:   binDir,
		NodeName: "e2e-jobs-node",
		PodCIDR:  jobsPodCIDR,
		Bridge:   jobsBridge,
	}, func() {
		if left := leftNetwork(jobsBridge); len(left) > 0 {
			t.Errorf("left on the host after down: %v", left)
		}
	})
	c := newJobsCluster(t, st.Kubeconfig, opts.UserConfigFile, opts.Dir)

	t.Run("demo job succeeds", func(t *testing.T) { testDemoJob(ctx, t, c) })
	t.Run("killed worker is re-created", func(t *testing.T) { testKilledWorker(ctx, t, c) })
	t.Run("failing worker fails the job", func(t *testing.T) { testFailingWorker(ctx, t, c) })
	t.Run("suspend and resume", func(t *testing.T) { testSuspendResume(ctx, t, c) })
	t.Run("logs through the API server", func(t *testing.T) { testLogs(ctx, t, c) })
	t.Run("describe says why an image is not pulled", func(t *testing.T) { testImagePull(ctx, t, c, st.Registry) })
	t.Run("a job cannot read the cluster's secrets", func(t *testing.T) { testSecretsHidden(ctx, t, c) })
	t.Run("a job cannot read the storage credentials", func(t *testing.T) { testStorageCredentialsHidden(ctx, t, c) })
	t.Run("etcd refuses clients without a certificate", func(t *testing.T) { testEtcdRefusesStrangers(t, opts.Dir, opts.Ports.Etcd) })
	t.Run("Prometheus scrapes each replica for the Grafana job dashboard", func(t *testing.T) {
		testPrometheus(ctx, t, c, opts.Ports.ControllerMetrics)
	})
	// Last: it brings the cluster down.
	t.Run("local down keeps a running job's final uploads", func(t *testing.T) { testDownKeepsFinalUploads(ctx, t, c, opts) })
}

func testDemoJob(ctx context.Context, t *testing.T, c *jobsCluster) {
	start := time.Now()
	var r cliResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		r = c.tfk8s(ctx, "submit", "../../examples/trainer", "--name", "demo", "--image", jobsImage,
			"--ps", "2", "--workers", "3", "--chief", "--artifacts", "checkpoints", "--follow",
			"--", "python3", "trainer.py", "--steps", "300", "--model-dir", "/workspace/checkpoints")
	}()
	replicas := []string{"chief-0", "ps-0", "ps-1", "worker-0", "worker-1", "worker-2"}
	if err := c.waitAllRunning(ctx, "demo", len(replicas), 50*time.Millisecond, done); err != nil {
		<-done
		t.Fatalf("%v; submit: %s", err, r)
	}
	t.Logf("submit → every replica Running: %.2f s", time.Since(start).Seconds())
	select {
	case <-done:
	case <-time.After(jobsWait):
		t.Fatalf("submit --follow did not return within %v", jobsWait)
	}
	if r.code != 0 {
		t.Fatalf("submit --follow: %s", r)
	}
	t.Logf("demo done %.2f s after submit", time.Since(start).Seconds())
	if job := c.job(ctx, t, "demo"); job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("demo state %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	c.eventually(ctx, t, "no parameter server of demo left running", func() (bool, error) {
		ps, err := c.pods(ctx, "demo")
		if err != nil {
			return false, err
		}
		for _, p := range ps {
			if p.Labels[tfv1.LabelReplicaType] == "ps" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	ls := c.mustTfk8s(ctx, t, "artifacts", "ls", "demo")
	want := []string{"chief-0/artifacts/workspace/checkpoints/final.json"}
	for _, rep := range replicas {
		want = append(want, rep+"/attempts/1/logs/tensorflow.log")
	}
	for _, w := range want {
		if !strings.Contains(ls.stdout, w) {
			t.Errorf("artifacts ls demo lacks %s:\n%s", w, ls.stdout)
		}
	}
}

// restartManifest is a job whose workers are re-created after a retryable failure.
const restartManifest = `apiVersion: tfk8s.io/v1alpha1
kind: TFJob
metadata:
  name: restart
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template: {spec: {containers: [{name: tensorflow}]}}
    PS:
      replicas: 1
      template: {spec: {containers: [{name: tensorflow}]}}
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template: {spec: {containers: [{name: tensorflow}]}}
`

func testKilledWorker(ctx context.Context, t *testing.T, c *jobsCluster) {
	manifest := filepath.Join(t.TempDir(), "restart.yaml")
	if err := os.WriteFile(manifest, []byte(restartManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustTfk8s(ctx, t, "submit", "../../examples/trainer", "-f", manifest, "--image", jobsImage,
		"--artifacts", "checkpoints",
		"--", "python3", "trainer.py", "--steps", "1000", "--step-delay", "0.05", "--model-dir", "/workspace/checkpoints")
	defer c.tfk8s(ctx, "delete", "restart")
	if err := c.waitAllRunning(ctx, "restart", 4, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	chief := c.pod(ctx, t, "restart", "chief", 0)
	c.eventually(ctx, t, "the chief logs training steps", func() (bool, error) {
		logs, err := c.cs.CoreV1().Pods(chief.Namespace).GetLogs(chief.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && strings.Contains(string(logs), " loss "), nil
	})
	worker := c.pod(ctx, t, "restart", "worker", 1)
	pid, err := trainerPID(string(worker.UID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing the trainer of %s (pod %s), pid %d", worker.Name, worker.UID, pid)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.eventually(ctx, t, "a new worker-1 pod Running", func() (bool, error) {
		ps, err := c.pods(ctx, "restart")
		if err != nil {
			return false, err
		}
		for _, p := range ps {
			if isReplica(p, "worker", 1) && p.UID != worker.UID && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("killed worker → replacement Running: %.2f s", time.Since(killed).Seconds())
	job := c.waitFinished(ctx, t, "restart")
	if took := time.Since(killed); took > 30*time.Second || job.Status.State != tfv1.JobSucceeded {
		// Slow or failed: the replicas' logs (backed up to S3) say where the time went.
		t.Logf("restart %s %.2f s after the kill; its logs:\n%s", job.Status.State, took.Seconds(), c.tfk8s(ctx, "logs", "restart"))
	}
	if job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("restart state %s, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
	if rs := job.Status.ReplicaStatuses[tfv1.ReplicaTypeWorker]; rs == nil || rs.Restarts != 1 {
		t.Errorf("worker status %+v, want 1 restart", rs)
	}
	t.Logf("restart done %.2f s after the kill", time.Since(killed).Seconds())
}

// failScript fails worker 1 once it has run 3 seconds; every other replica sleeps
// (and ends on SIGTERM, which a pid 1 would otherwise ignore).
const failScript = `import json, os, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
task = json.loads(os.environ["TF_CONFIG"])["task"]
print("task", task, flush=True)
if task["type"] == "worker" and task["index"] == 1:
    time.sleep(3)
    sys.exit(1)
time.sleep(300)
`

func testFailingWorker(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "--name", "failing", "--image", jobsImage, "--ps", "1", "--workers", "2",
		"--", "python3", "-c", failScript)
	defer c.tfk8s(ctx, "delete", "failing")
	// Every replica runs before worker 1 fails, so that the job has running pods to clean.
	if err := c.waitAllRunning(ctx, "failing", 3, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	job := c.waitFinished(ctx, t, "failing")
	cond := condition(job, tfv1.JobFailed)
	if job.Status.State != tfv1.JobFailed || cond == nil {
		t.Fatalf("failing state %s, want Failed: %+v", job.Status.State, job.Status.Conditions)
	}
	t.Logf("Failed condition: %s: %s", cond.Reason, cond.Message)
	if cond.Reason != tfv1.ReasonFailed || !strings.Contains(cond.Message, "worker 1 ") || !strings.Contains(cond.Message, "exit code 1") {
		t.Errorf("Failed condition %s: %q, want reason %s and a message naming worker 1 and exit code 1", cond.Reason, cond.Message, tfv1.ReasonFailed)
	}
	c.eventually(ctx, t, "the parameter server and worker 0 deleted", func() (bool, error) {
		ps, err := c.pods(ctx, "failing")
		if err != nil {
			return false, err
		}
		for _, p := range ps {
			if !isReplica(p, "worker", 1) {
				return false, nil
			}
		}
		return true, nil
	})
}

func testSuspendResume(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "../../examples/trainer", "--name", "pause", "--image", jobsImage,
		"--workers", "1", "--chief", "--artifacts", "checkpoints",
		"--", "python3", "trainer.py", "--steps", "300", "--step-delay", "0.05", "--model-dir", "/workspace/checkpoints")
	defer c.tfk8s(ctx, "delete", "pause")
	if err := c.waitAllRunning(ctx, "pause", 2, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	c.mustTfk8s(ctx, t, "suspend", "pause")
	suspended := time.Now()
	c.eventually(ctx, t, "pause Suspended without pods", func() (bool, error) {
		ps, err := c.pods(ctx, "pause")
		if err != nil {
			return false, err
		}
		return len(ps) == 0 && c.jobState(ctx, "pause") == tfv1.JobSuspended, nil
	})
	t.Logf("suspend → no pods: %.2f s", time.Since(suspended).Seconds())
	c.mustTfk8s(ctx, t, "resume", "pause")
	if err := c.waitAllRunning(ctx, "pause", 2, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	if job := c.waitFinished(ctx, t, "pause"); job.Status.State != tfv1.JobSucceeded {
		t.Fatalf("pause state %s after resume, want Succeeded: %+v", job.Status.State, job.Status.Conditions)
	}
}

// logsScript prints lines, then waits to be stopped.
const logsScript = `import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
for i in range(3):
    print(f"e2e line {i}", flush=True)
time.sleep(300)
`

func testLogs(ctx context.Context, t *testing.T, c *jobsCluster) {
	c.mustTfk8s(ctx, t, "submit", "--name", "talk", "--image", jobsImage, "--workers", "0", "--chief",
		"--", "python3", "-c", logsScript)
	defer c.tfk8s(ctx, "delete", "talk", "--wait")
	if err := c.waitAllRunning(ctx, "talk", 1, 100*time.Millisecond, nil); err != nil {
		c.fail(t, "%v", err)
	}
	chief := c.pod(ctx, t, "talk", "chief", 0)
	var r cliResult
	c.eventually(ctx, t, "tfk8s logs talk chief-0 prints the chief's lines", func() (bool, error) {
		r = c.tfk8s(ctx, "logs", "talk", "chief-0")
		return r.code == 0 && strings.Contains(r.stdout, "e2e line 2"), nil
	})
	for i := range 3 {
		if want := fmt.Sprintf("[chief-0] e2e line %d", i); !strings.Contains(r.stdout, want) {
			t.Errorf("tfk8s logs lacks %q: %s", want, r)
		}
	}
	// A running pod's log is the kubelet's, through the API server: the agent's copy
	// in S3 is only the fallback, which tfk8s logs announces.
	if strings.Contains(r.stderr, "no live log") {
		t.Errorf("tfk8s logs of a running pod fell back to S3: %s", r)
	}
	// The same through client-go, which only the API server (from the kubelet) answers.
	logs, err := c.cs.CoreV1().Pods(chief.Namespace).GetLogs(chief.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "e2e line 0\ne2e line 1\ne2e line 2\n") {
		t.Errorf("GetLogs of %s: %v\n%s", chief.Name, err, logs)
	}
	// exec too goes through the API server to the kubelet, which must show the
	// certificate the API server checks it against.
	host, err := execIn(ctx, c.kubeconfig, c.cs, chief.Namespace, chief.Name, "python3", "-c", "import socket; print(socket.gethostname())")
	if err != nil || strings.TrimSpace(host) != chief.Name {
		t.Errorf("exec in %s printed hostname %q (%v), want %s", chief.Name, host, err, chief.Name)
	}
	if p := c.pod(ctx, t, "talk", "chief", 0); p.UID != chief.UID || p.Status.Phase != corev1.PodRunning {
		t.Errorf("chief pod changed while its logs were read: %s %s", p.UID, p.Status.Phase)
	}
}
