package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/cli"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// jobsCluster runs the CLI and reads jobs and pods on the test's cluster.
type jobsCluster struct {
	// dir is the cluster's state directory, config the CLI's S3 settings.
	kubeconfig, config, dir string
	cs                      *kubernetes.Clientset
	cl                      client.Client
	// wait bounds every wait for a job or its pods: jobsWait unless set.
	wait time.Duration
}

func newJobsCluster(t *testing.T, kubeconfig, config, dir string) *jobsCluster {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return &jobsCluster{kubeconfig: kubeconfig, config: config, dir: dir, cs: clientset(t, kubeconfig), cl: cl, wait: jobsWait}
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func (r cliResult) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// tfk8s runs the CLI in-process in namespace default, with the cluster's S3 config
// file and none of the process's environment.
func (c *jobsCluster) tfk8s(ctx context.Context, args ...string) cliResult {
	return c.tfk8sErrTo(ctx, nil, args...)
}

// tfk8sErrTo is tfk8s that also writes the command's stderr, as it comes, to errTo
// (nil for none).
func (c *jobsCluster) tfk8sErrTo(ctx context.Context, errTo io.Writer, args ...string) cliResult {
	var stdout, stderr testutil.SyncBuffer
	errOut := io.Writer(&stderr)
	if errTo != nil {
		errOut = io.MultiWriter(&stderr, errTo)
	}
	env := cli.Env{
		IOStreams:  genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: errOut},
		Getenv:     func(string) string { return "" },
		ConfigFile: c.config,
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	code := cli.Main(ctx, append([]string{"--kubeconfig", c.kubeconfig, "-n", "default"}, args...), env)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func (c *jobsCluster) mustTfk8s(ctx context.Context, t *testing.T, args ...string) cliResult {
	t.Helper()
	r := c.tfk8s(ctx, args...)
	if r.code != 0 {
		t.Fatalf("tfk8s %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// fail prints the cluster's pods and events as they are now, then fails the test.
func (c *jobsCluster) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	diagnose(t, c.kubeconfig, c.dir, false)
	t.Fatalf(format, args...)
}

// pods lists the job's replicas' pods: not its record pod (<job>-record), which
// carries the job's label but no replica type.
func (c *jobsCluster) pods(ctx context.Context, job string) ([]corev1.Pod, error) {
	selector := tfv1.LabelJobName + "=" + job + "," + tfv1.LabelReplicaType
	list, err := c.cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// pod returns the job's live pod of the replica.
func (c *jobsCluster) pod(ctx context.Context, t *testing.T, job, typ string, index int) corev1.Pod {
	t.Helper()
	ps, err := c.pods(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if isReplica(p, typ, index) && p.DeletionTimestamp == nil {
			return p
		}
	}
	t.Fatalf("%s has no %s-%d pod", job, typ, index)
	return corev1.Pod{}
}

func isReplica(p corev1.Pod, typ string, index int) bool {
	return p.Labels[tfv1.LabelReplicaType] == typ && p.Labels[tfv1.LabelReplicaIndex] == strconv.Itoa(index)
}

// waitAllRunning polls every interval until the job has n pods, all Running, or
// stop closes.
func (c *jobsCluster) waitAllRunning(ctx context.Context, job string, n int, interval time.Duration, stop <-chan struct{}) error {
	deadline := time.Now().Add(c.wait)
	var last string
	for {
		ps, err := c.pods(ctx, job)
		if err == nil {
			running := 0
			var phases []string
			for _, p := range ps {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					running++
				}
				phases = append(phases, p.Name+"="+string(p.Status.Phase))
			}
			if running == n && len(ps) == n {
				return nil
			}
			last = strings.Join(phases, " ")
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not %d pods Running within %v; last: %s", job, n, c.wait, last)
		}
		select {
		case <-stop:
			return fmt.Errorf("%s: stopped before %d pods ran; last: %s", job, n, last)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func (c *jobsCluster) job(ctx context.Context, t *testing.T, name string) *tfv1.TFJob {
	t.Helper()
	job := &tfv1.TFJob{}
	if err := c.cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, job); err != nil {
		t.Fatalf("reading tfjob %s: %v", name, err)
	}
	return job
}

func (c *jobsCluster) jobState(ctx context.Context, name string) tfv1.JobState {
	job := &tfv1.TFJob{}
	if err := c.cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, job); err != nil {
		return ""
	}
	return job.Status.State
}

// waitFinished waits until the job has Succeeded or Failed and returns it.
func (c *jobsCluster) waitFinished(ctx context.Context, t *testing.T, name string) *tfv1.TFJob {
	t.Helper()
	c.eventually(ctx, t, name+" finished", func() (bool, error) {
		s := c.jobState(ctx, name)
		return s == tfv1.JobSucceeded || s == tfv1.JobFailed, nil
	})
	return c.job(ctx, t, name)
}

// eventually polls cond every 100 ms for up to c.wait.
func (c *jobsCluster) eventually(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(c.wait)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.fail(t, "waiting %v for %s: last error %v", c.wait, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func condition(job *tfv1.TFJob, typ tfv1.JobState) *metav1.Condition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == string(typ) && job.Status.Conditions[i].Status == metav1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// trainerPID finds the trainer process of a pod on the host: a python3 running
// trainer.py in the pod's cgroup.
func trainerPID(podUID string) (int, error) { return programPID(podUID, "trainer.py") }

// programPID finds a pod's Python program on the host: a python3 running script in the
// pod's cgroup.
func programPID(podUID, script string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cgroup, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cgroup), podUID) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "python3") && strings.Contains(string(cmdline), script) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("want one %s process in the cgroup of pod %s, found %v", script, podUID, found)
	}
	return found[0], nil
}
