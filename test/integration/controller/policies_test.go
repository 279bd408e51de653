package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestChiefSucceedsPSRecycled: the chief's success ends the job, and the parameter
// servers and workers still running are deleted at once (cleanPodPolicy Running).
func TestChiefSucceedsPSRecycled(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("train", ns).Chief().PS(2).Workers(2).Obj()); err != nil {
		t.Fatal(err)
	}
	all := []string{"train-chief-0", "train-ps-0", "train-ps-1", "train-worker-0", "train-worker-1"}
	waitPods(t, ns, "train", all...)
	kubelet.SetRunning(t, ns, all...)
	waitCondition(t, ns, "train", tfv1.JobRunning)

	kubelet.SetExited(t, ns, "train-chief-0", 0)
	job := waitCondition(t, ns, "train", tfv1.JobSucceeded)
	if job.Status.State != tfv1.JobSucceeded || job.Status.CompletionTime == nil {
		t.Errorf("state %q completion %v, want Succeeded with a completion time", job.Status.State, job.Status.CompletionTime)
	}
	// The chief's pod stays, its outcome recorded and its finalizer released; the
	// running parameter servers and workers are gone.
	pods := waitPods(t, ns, "train", "train-chief-0")
	if fs := pods["train-chief-0"].Finalizers; len(fs) != 0 {
		t.Errorf("finished chief still has finalizers %v", fs)
	}
	if got := replicaStatus(job, tfv1.ReplicaTypeChief).SucceededIndexes; got != "0" {
		t.Errorf("chief succeeded indexes %q, want 0", got)
	}
	for name, want := range map[string]float64{"tfk8s_jobs_created_total": 1, "tfk8s_jobs_succeeded_total": 1, "tfk8s_jobs_failed_total": 0} {
		if got := metricValue(t, name, ns); got != want {
			t.Errorf("%s{namespace=%q} = %v, want %v", name, ns, got, want)
		}
	}
	if metricValue(t, "tfk8s_job_startup_seconds", "") < 1 || metricValue(t, "tfk8s_pods_created_total", "") < 5 {
		t.Error("startup time or pod creations not recorded")
	}
}

// TestExitCodeRetriesUntilBackoffLimit: under ExitCode, a worker killed by SIGKILL (137)
// is re-created and the restart counted; once restarts exceed backoffLimit the job fails
// with the exit code in its status, and the parameter servers are cleaned up.
func TestExitCodeRetriesUntilBackoffLimit(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("retry", ns).PS(1).Workers(2).BackoffLimit(1).
		RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	all := []string{"retry-ps-0", "retry-worker-0", "retry-worker-1"}
	pods := waitPods(t, ns, "retry", all...)
	kubelet.SetRunning(t, ns, all...)
	firstUID := pods["retry-worker-1"].UID

	kubelet.SetExited(t, ns, "retry-worker-1", 137)
	waitReplaced(t, ns, "retry", "retry-worker-1", firstUID)
	got := waitCondition(t, ns, "retry", tfv1.JobRestarting)
	if r := replicaStatus(got, tfv1.ReplicaTypeWorker).Restarts; r != 1 {
		t.Errorf("worker restarts = %d, want 1", r)
	}

	kubelet.SetRunning(t, ns, "retry-worker-1")
	waitCondition(t, ns, "retry", tfv1.JobRunning)
	kubelet.SetExited(t, ns, "retry-worker-1", 137)
	got = waitCondition(t, ns, "retry", tfv1.JobFailed)
	failed := conditionOf(got, tfv1.JobFailed)
	if failed.Reason != tfv1.ReasonBackoffLimitExceeded || !strings.Contains(failed.Message, "exit code 137") {
		t.Errorf("Failed condition %s: %q, want %s naming exit code 137", failed.Reason, failed.Message, tfv1.ReasonBackoffLimitExceeded)
	}
	if got := metricValue(t, "tfk8s_jobs_restarted_total", ns); got != 1 {
		t.Errorf("tfk8s_jobs_restarted_total = %v, want 1", got)
	}
	last := replicaStatus(got, tfv1.ReplicaTypeWorker).LastFailure
	if last == nil || last.ExitCode != 137 || last.Index != 1 {
		t.Errorf("last worker failure %+v, want worker 1 with exit code 137", last)
	}
	// Everything still running is cleaned up; no replacement is created.
	waitPods(t, ns, "retry", "retry-worker-1")
}

// TestPermanentFailureFailsJob: exit code 1 under ExitCode is the program's verdict.
func TestPermanentFailureFailsJob(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("fail", ns).PS(1).Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	all := []string{"fail-ps-0", "fail-worker-0", "fail-worker-1"}
	waitPods(t, ns, "fail", all...)
	kubelet.SetRunning(t, ns, all...)
	kubelet.SetExited(t, ns, "fail-worker-0", 1)
	got := waitCondition(t, ns, "fail", tfv1.JobFailed)
	if c := conditionOf(got, tfv1.JobFailed); c.Reason != tfv1.ReasonFailed || !strings.Contains(c.Message, "worker 0") || !strings.Contains(c.Message, "exit code 1") {
		t.Errorf("Failed condition %s: %q", c.Reason, c.Message)
	}
	waitPods(t, ns, "fail", "fail-worker-0")
	if replicaStatus(got, tfv1.ReplicaTypeWorker).Restarts != 0 {
		t.Errorf("a permanent failure counted as a restart")
	}
}

// TestContainerRestartsCountTowardsBackoffLimit: under OnFailure the kubelet restarts the
// container in place; those restarts count like pod re-creations.
func TestContainerRestartsCountTowardsBackoffLimit(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("crash", ns).Workers(2).BackoffLimit(2).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyOnFailure).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "crash", "crash-worker-0", "crash-worker-1")
	if p := pods["crash-worker-0"].Spec.RestartPolicy; p != corev1.RestartPolicyOnFailure {
		t.Errorf("pod restartPolicy %s, want OnFailure", p)
	}
	kubelet.SetRunning(t, ns, "crash-worker-0")
	kubelet.SetRestarted(t, ns, "crash-worker-1", 2, 3)
	testutil.Eventually(t, "2 restarts counted", func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, "crash")
		return err == nil && replicaStatus(job, tfv1.ReplicaTypeWorker).Restarts == 2, err
	})
	kubelet.SetRestarted(t, ns, "crash-worker-1", 3, 3)
	got := waitCondition(t, ns, "crash", tfv1.JobFailed)
	if c := conditionOf(got, tfv1.JobFailed); c.Reason != tfv1.ReasonBackoffLimitExceeded {
		t.Errorf("Failed reason %s, want %s", c.Reason, tfv1.ReasonBackoffLimitExceeded)
	}
	if last := replicaStatus(got, tfv1.ReplicaTypeWorker).LastFailure; last == nil || last.ExitCode != 3 {
		t.Errorf("last failure %+v, want exit code 3", last)
	}
}

// TestEvictedPodRecreatedUnderExitCode: a pod disruption re-creates the pod.
func TestEvictedPodRecreatedUnderExitCode(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("evict", ns).PS(1).Workers(1).RestartPolicy(tfv1.ReplicaTypePS, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "evict", "evict-ps-0", "evict-worker-0")
	kubelet.SetRunning(t, ns, "evict-ps-0", "evict-worker-0")
	kubelet.SetEvicted(t, ns, "evict-ps-0")
	testutil.Eventually(t, "PS 0 re-created", func(ctx context.Context) (bool, error) {
		now, err := jobPods(ctx, ns, "evict")
		p := now["evict-ps-0"]
		return p != nil && p.UID != pods["evict-ps-0"].UID && p.Status.Phase == corev1.PodPending, err
	})
	got, _ := getJob(context.Background(), ns, "evict")
	if last := replicaStatus(got, tfv1.ReplicaTypePS).LastFailure; last == nil || last.Reason != "Evicted" {
		t.Errorf("last PS failure %+v, want Evicted", last)
	}
}

// TestPodDeletedFromOutsideIsRecreated: a running worker's pod deleted by someone else
// comes back, and the restart is counted.
func TestPodDeletedFromOutsideIsRecreated(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("gone", ns).PS(1).Workers(2).RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "gone", "gone-ps-0", "gone-worker-0", "gone-worker-1")
	kubelet.SetRunning(t, ns, "gone-ps-0", "gone-worker-0", "gone-worker-1")
	if err := k8sClient.Delete(ctx, pods["gone-worker-0"]); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "worker 0 re-created", func(ctx context.Context) (bool, error) {
		now, err := jobPods(ctx, ns, "gone")
		p := now["gone-worker-0"]
		return p != nil && p.UID != pods["gone-worker-0"].UID, err
	})
	testutil.Eventually(t, "the restart counted", func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, "gone")
		return err == nil && replicaStatus(job, tfv1.ReplicaTypeWorker).Restarts == 1, err
	})
}

// TestSucceededWorkerIsNeverRerun: under AllWorkers, a worker that succeeded is not
// created again when its pod disappears, even before the job has finished.
func TestSucceededWorkerIsNeverRerun(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("once", ns).Workers(2).SuccessPolicy(tfv1.SuccessPolicyAllWorkers).
		RestartPolicy(tfv1.ReplicaTypeWorker, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "once", "once-worker-0", "once-worker-1")
	kubelet.SetRunning(t, ns, "once-worker-0", "once-worker-1")
	kubelet.SetExited(t, ns, "once-worker-0", 0)
	testutil.Eventually(t, "worker 0's success recorded and its pod released", func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, "once")
		if err != nil || replicaStatus(job, tfv1.ReplicaTypeWorker).SucceededIndexes != "0" {
			return false, err
		}
		pods, err := jobPods(ctx, ns, "once")
		return err == nil && len(pods["once-worker-0"].Finalizers) == 0, err
	})
	if isTrue(t, ns, "once", tfv1.JobSucceeded) {
		t.Fatal("job succeeded with one of two workers under AllWorkers")
	}
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "once-worker-0"}, pod); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "once", "once-worker-1")
	// Worker 1's pod is deleted from outside after worker 0's: the controller sees both
	// deletions in that order, so by the time it has re-created worker 1 it had its
	// chance to re-create worker 0 too.
	worker1 := deletePod(t, ns, "once-worker-1")
	waitReplacement(t, ns, "once-worker-1", worker1)
	if pods, _ := jobPods(ctx, ns, "once"); pods["once-worker-0"] != nil {
		t.Fatal("succeeded worker 0 was created again")
	}
	kubelet.SetRunning(t, ns, "once-worker-1")
	kubelet.SetExited(t, ns, "once-worker-1", 0)
	waitCondition(t, ns, "once", tfv1.JobSucceeded)
}

// TestFailedEvaluatorDoesNotFailTraining.
func TestFailedEvaluatorDoesNotFailTraining(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("eval", ns).Chief().Workers(1).Evaluator().Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "eval", "eval-chief-0", "eval-worker-0", "eval-evaluator-0")
	kubelet.SetRunning(t, ns, "eval-chief-0", "eval-worker-0", "eval-evaluator-0")
	kubelet.SetExited(t, ns, "eval-evaluator-0", 2)
	testutil.Eventually(t, "the evaluator's failure reported", func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, "eval")
		return err == nil && replicaStatus(job, tfv1.ReplicaTypeEvaluator).Failed == 1, err
	})
	if isTrue(t, ns, "eval", tfv1.JobFailed) {
		t.Fatal("a failed evaluator failed the job")
	}
	kubelet.SetExited(t, ns, "eval-chief-0", 0)
	waitCondition(t, ns, "eval", tfv1.JobSucceeded)
}

// TestSuspendAndResume: suspending deletes the pods and keeps the status; resuming
// creates them again.
func TestSuspendAndResume(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	if err := k8sClient.Create(ctx, testutil.MakeTFJob("pause", ns).PS(1).Workers(2).Obj()); err != nil {
		t.Fatal(err)
	}
	all := []string{"pause-ps-0", "pause-worker-0", "pause-worker-1"}
	waitPods(t, ns, "pause", all...)
	kubelet.SetRunning(t, ns, all...)
	waitCondition(t, ns, "pause", tfv1.JobRunning)

	setSuspend(t, ns, "pause", true)
	job := waitCondition(t, ns, "pause", tfv1.JobSuspended)
	waitPods(t, ns, "pause")
	if job.Status.State != tfv1.JobSuspended {
		t.Errorf("state %q, want Suspended", job.Status.State)
	}

	setSuspend(t, ns, "pause", false)
	waitPods(t, ns, "pause", all...)
	kubelet.SetRunning(t, ns, all...)
	job = waitCondition(t, ns, "pause", tfv1.JobRunning)
	if c := conditionOf(job, tfv1.JobSuspended); c.Status != "False" || c.Reason != tfv1.ReasonResumed {
		t.Errorf("Suspended condition %s/%s after resume, want False/%s", c.Status, c.Reason, tfv1.ReasonResumed)
	}
	if r := replicaStatus(job, tfv1.ReplicaTypeWorker).Restarts; r != 0 {
		t.Errorf("suspension counted %d restarts", r)
	}
}

// TestActiveDeadline fails a job that runs too long and cleans up its pods.
func TestActiveDeadline(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	if err := k8sClient.Create(context.Background(), testutil.MakeTFJob("slow", ns).PS(1).Workers(1).ActiveDeadlineSeconds(2).Obj()); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "slow", "slow-ps-0", "slow-worker-0")
	job := waitCondition(t, ns, "slow", tfv1.JobFailed)
	if c := conditionOf(job, tfv1.JobFailed); c.Reason != tfv1.ReasonDeadlineExceeded {
		t.Errorf("Failed reason %s, want %s", c.Reason, tfv1.ReasonDeadlineExceeded)
	}
	waitPods(t, ns, "slow")
}

// TestTTLDeletesJobAndPods: a finished job is deleted after its TTL, and garbage
// collection deletes its pods and Service.
func TestTTLDeletesJobAndPods(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	ctx := context.Background()
	job := testutil.MakeTFJob("ttl", ns).Workers(1).TTLSecondsAfterFinished(1).CleanPodPolicy(tfv1.CleanPodPolicyNone).Obj()
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "ttl", "ttl-worker-0")
	kubelet.SetExited(t, ns, "ttl-worker-0", 0)
	waitCondition(t, ns, "ttl", tfv1.JobSucceeded)
	testutil.Eventually(t, "the job deleted", func(ctx context.Context) (bool, error) {
		_, err := getJob(ctx, ns, "ttl")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	waitPods(t, ns, "ttl")
	testutil.Eventually(t, "the Service garbage-collected", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ttl"}, &corev1.Service{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestPSFirstStartsWorkersOncePSRun.
func TestPSFirstStartsWorkersOncePSRun(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("psfirst", ns).Chief().PS(2).Workers(2).StartupPolicy(tfv1.StartupPolicyPSFirst).
		RestartPolicy(tfv1.ReplicaTypePS, tfv1.RestartPolicyExitCode).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "psfirst", "psfirst-ps-0", "psfirst-ps-1")
	kubelet.SetRunning(t, ns, "psfirst-ps-0")
	// PS 1's pending pod is deleted from outside after PS 0 runs: the controller sees
	// both in that order, so by the time it has re-created PS 1 it had its chance to
	// start the workers early.
	ps1 := deletePod(t, ns, "psfirst-ps-1")
	waitReplacement(t, ns, "psfirst-ps-1", ps1)
	if pods, _ := jobPods(context.Background(), ns, "psfirst"); len(pods) != 2 {
		t.Fatalf("%d pods with one PS of two running, want the 2 PS only", len(pods))
	}
	kubelet.SetRunning(t, ns, "psfirst-ps-1")
	waitPods(t, ns, "psfirst", "psfirst-ps-0", "psfirst-ps-1", "psfirst-chief-0", "psfirst-worker-0", "psfirst-worker-1")
}

// TestJobManagedElsewhereIsLeftAlone.
func TestJobManagedElsewhereIsLeftAlone(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("other", ns).Workers(2).Obj()
	other := "example.com/another-controller"
	job.Spec.RunPolicy.ManagedBy = &other
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	// A second job, reconciled, proves the controller was running meanwhile.
	if err := k8sClient.Create(context.Background(), testutil.MakeTFJob("mine", ns).Workers(1).Obj()); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "mine", "mine-worker-0")
	if pods, _ := jobPods(context.Background(), ns, "other"); len(pods) != 0 {
		t.Errorf("tfk8s created %d pods for a job managed by %s", len(pods), other)
	}
}

// deletePod deletes a pod as someone other than tfk8s would, and returns its UID.
func deletePod(t *testing.T, ns, name string) types.UID {
	t.Helper()
	pod := &corev1.Pod{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod.UID
}

func setSuspend(t *testing.T, ns, name string, suspend bool) {
	t.Helper()
	job := &tfv1.TFJob{}
	job.Namespace, job.Name = ns, name
	patch := []byte(`{"spec":{"runPolicy":{"suspend":false}}}`)
	if suspend {
		patch = []byte(`{"spec":{"runPolicy":{"suspend":true}}}`)
	}
	if err := k8sClient.Patch(context.Background(), job, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

func conditionOf(job *tfv1.TFJob, typ tfv1.JobState) (c struct{ Status, Reason, Message string }) {
	for _, cond := range job.Status.Conditions {
		if cond.Type == string(typ) {
			c.Status, c.Reason, c.Message = string(cond.Status), cond.Reason, cond.Message
		}
	}
	return c
}

func isTrue(t *testing.T, ns, name string, typ tfv1.JobState) bool {
	t.Helper()
	job, err := getJob(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return conditionOf(job, typ).Status == "True"
}
