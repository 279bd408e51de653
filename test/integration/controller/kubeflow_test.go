package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	"github.com/tfk8s/tfk8s/internal/controller"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// startKubeflowController serves the kubeflow.org TFJob CRD, then starts the controller
// with --kubeflow, which reconciles those jobs too.
func startKubeflowController(t *testing.T) {
	t.Helper()
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
	startKubeflowReconciler(t)
}

// startKubeflowReconciler starts the controller as --kubeflow does, on a served CRD.
func startKubeflowReconciler(t *testing.T) {
	t.Helper()
	startControllerWith(t, *cp.Config, controller.Options{RetryBackoff: 200 * time.Millisecond, Kubeflow: true})
}

// makeKubeflowJob is a Kubeflow TFJob as its users write one: a chief, PS and workers,
// each a container named tensorflow, nothing defaulted.
func makeKubeflowJob(ns, name string, ps, workers int32) *kubeflowv1.TFJob {
	replica := func(n int32) *kubeflowv1.ReplicaSpec {
		return &kubeflowv1.ReplicaSpec{Replicas: ptr.To(n), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "tensorflow", Image: "tensorflow/tensorflow:2.21.0", Command: []string{"python", "train.py"}}},
		}}}
	}
	job := &kubeflowv1.TFJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kubeflowv1.TFJobSpec{TFReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
			"Chief": replica(1), "PS": replica(ps), "Worker": replica(workers),
		}},
	}
	job.Spec.TFReplicaSpecs["Chief"].Replicas = nil // v1.9's default: 1
	return job
}

// getKubeflowJob reads a Kubeflow TFJob.
func getKubeflowJob(ctx context.Context, ns, name string) (*kubeflowv1.TFJob, error) {
	job := &kubeflowv1.TFJob{}
	return job, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job)
}

// waitKubeflowCondition waits until the Kubeflow job's condition typ is True.
func waitKubeflowCondition(t *testing.T, ns, name string, typ kubeflowv1.JobConditionType) *kubeflowv1.TFJob {
	t.Helper()
	var job *kubeflowv1.TFJob
	testutil.Eventually(t, fmt.Sprintf("kubeflow.org TFJob %s to be %s", name, typ), func(ctx context.Context) (bool, error) {
		var err error
		if job, err = getKubeflowJob(ctx, ns, name); err != nil {
			return false, err
		}
		c := kubeflowCondition(job, typ)
		return c != nil && c.Status == corev1.ConditionTrue, nil
	})
	return job
}

func kubeflowCondition(job *kubeflowv1.TFJob, typ kubeflowv1.JobConditionType) *kubeflowv1.JobCondition {
	for i := range job.Status.Conditions {
		if job.Status.Conditions[i].Type == typ {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// TestKubeflowJobRunsAsTrainingOperatorsDid: a kubeflow.org TFJob gets its pods, with
// Kubeflow's labels and an owner reference to it, its Service and TF_CONFIG; the pods'
// status drives Created, Running and Succeeded in Kubeflow's shape, and its pods stay
// (cleanPodPolicy None, v1.9's default).
func TestKubeflowJobRunsAsTrainingOperatorsDid(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	job := makeKubeflowJob(ns, "mnist", 1, 2)
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	names := []string{"mnist-chief-0", "mnist-ps-0", "mnist-worker-0", "mnist-worker-1"}
	pods := waitPods(t, ns, "mnist", names...)
	wantOwner := metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: "mnist", UID: job.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	for _, name := range names {
		pod := pods[name]
		checkKubeflowLabels(t, pod, name == "mnist-chief-0")
		if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, pod.OwnerReferences); diff != "" {
			t.Errorf("%s owner (-want +got):\n%s", name, diff)
		}
		var cfg struct {
			Cluster map[string][]string   `json:"cluster"`
			Task    struct{ Type string } `json:"task"`
		}
		if err := json.Unmarshal([]byte(envValue(pod, "TF_CONFIG")), &cfg); err != nil {
			t.Fatalf("%s: TF_CONFIG: %v", name, err)
		}
		if got := cfg.Cluster["chief"]; len(got) != 1 || got[0] != "mnist-chief-0.mnist."+ns+".svc:2222" || len(cfg.Cluster["worker"]) != 2 {
			t.Errorf("%s: TF_CONFIG cluster %v", name, cfg.Cluster)
		}
		if ports := pod.Spec.Containers[0].Ports; len(ports) != 1 || ports[0].Name != "tfjob-port" || ports[0].ContainerPort != 2222 {
			t.Errorf("%s: ports %+v, want v1.9's default tfjob-port 2222", name, ports)
		}
	}
	svc := &corev1.Service{}
	testutil.Eventually(t, "the job's Service exists", func(ctx context.Context) (bool, error) {
		return true, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mnist"}, svc)
	})
	if diff := cmp.Diff([]metav1.OwnerReference{wantOwner}, svc.OwnerReferences); diff != "" {
		t.Errorf("Service owner (-want +got):\n%s", diff)
	}

	created := waitKubeflowCondition(t, ns, "mnist", "Created")
	if c := kubeflowCondition(created, "Created"); c.Reason != "TFJobCreated" || created.Status.StartTime == nil || created.Status.LastReconcileTime == nil {
		t.Errorf("Created: reason %q, startTime %v, lastReconcileTime %v", c.Reason, created.Status.StartTime, created.Status.LastReconcileTime)
	}
	kubelet.SetRunning(t, ns, names...)
	running := waitKubeflowCondition(t, ns, "mnist", "Running")
	checkLastCondition(t, running, "Running", "TFJobRunning")
	wantWorkers := &kubeflowv1.ReplicaStatus{Active: 2,
		Selector: "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=worker"}
	if diff := cmp.Diff(wantWorkers, running.Status.ReplicaStatuses["Worker"]); diff != "" {
		t.Errorf("worker status (-want +got):\n%s", diff)
	}

	kubelet.SetExited(t, ns, "mnist-chief-0", 0)
	done := waitKubeflowCondition(t, ns, "mnist", "Succeeded")
	checkLastCondition(t, done, "Succeeded", "TFJobSucceeded")
	if done.Status.CompletionTime == nil || done.Status.ReplicaStatuses["Chief"].Succeeded != 1 {
		t.Errorf("completionTime %v, chief %+v; want a time and 1 succeeded", done.Status.CompletionTime, done.Status.ReplicaStatuses["Chief"])
	}
	// cleanPodPolicy None: the reconcile that wrote Succeeded deleted no pod.
	left, err := jobPods(ctx, ns, "mnist")
	if err != nil {
		t.Fatal(err)
	}
	if p := left["mnist-ps-0"]; p == nil || p.DeletionTimestamp != nil {
		t.Errorf("the PS pod is gone or being deleted under cleanPodPolicy None: %v", p)
	}
	// kubectl describe tfjobs.kubeflow.org finds the job's events by their regarding object.
	testutil.Eventually(t, "a TFJobSucceeded event regarding the kubeflow.org job", func(ctx context.Context) (bool, error) {
		events := &eventsv1.EventList{}
		if err := k8sClient.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			r := e.Regarding
			if r.APIVersion == "kubeflow.org/v1" && r.Kind == "TFJob" && r.Name == "mnist" && r.UID == job.UID && e.Reason == "TFJobSucceeded" {
				return true, nil
			}
		}
		return false, nil
	})
}

// checkKubeflowLabels checks training-operator's labels on the pod <job>-<type>-<index>.
func checkKubeflowLabels(t *testing.T, pod *corev1.Pod, master bool) {
	t.Helper()
	parts := strings.Split(pod.Name, "-")
	want := map[string]string{
		"training.kubeflow.org/job-name": parts[0], "training.kubeflow.org/replica-type": parts[1],
		"training.kubeflow.org/replica-index": parts[2], "training.kubeflow.org/operator-name": "tfjob-controller",
	}
	if master {
		want["training.kubeflow.org/job-role"] = "master"
	}
	got := map[string]string{}
	for k, v := range pod.Labels {
		if strings.HasPrefix(k, "training.kubeflow.org/") {
			got[k] = v
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s Kubeflow labels (-want +got):\n%s", pod.Name, diff)
	}
}

// checkLastCondition checks that the job's last condition, which kubectl's State column
// shows, is typ with reason.
func checkLastCondition(t *testing.T, job *kubeflowv1.TFJob, typ kubeflowv1.JobConditionType, reason string) {
	t.Helper()
	cs := job.Status.Conditions
	if last := cs[len(cs)-1]; last.Type != typ || last.Reason != reason || last.LastUpdateTime.IsZero() || last.LastTransitionTime.IsZero() {
		t.Errorf("last condition %+v, want %s with reason %s and both times", last, typ, reason)
	}
}

// TestKubeflowJobSuspendAndResume: runPolicy.suspend, as Kueue's kubeflow.org/tfjob
// integration drives it, holds the pods back and then lets them be created.
func TestKubeflowJobSuspendAndResume(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	job := makeKubeflowJob(ns, "queued", 1, 1)
	job.Spec.RunPolicy.Suspend = ptr.To(true)
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	suspended := waitKubeflowCondition(t, ns, "queued", "Suspended")
	checkLastCondition(t, suspended, "Suspended", "TFJobSuspended")
	if pods, err := jobPods(ctx, ns, "queued"); err != nil || len(pods) != 0 {
		t.Errorf("a suspended job has %d pods (%v)", len(pods), err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"runPolicy":{"suspend":false}}}`))
	if err := k8sClient.Patch(ctx, job, patch); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "queued", "queued-chief-0", "queued-ps-0", "queued-worker-0")
	testutil.Eventually(t, "Suspended to be False", func(ctx context.Context) (bool, error) {
		got, err := getKubeflowJob(ctx, ns, "queued")
		c := kubeflowCondition(got, "Suspended")
		return err == nil && c != nil && c.Status == corev1.ConditionFalse, err
	})
}

// TestKubeflowJobManagedByMultiKueueIsLeftAlone: a job for MultiKueue runs on another
// cluster; here tfk8s creates nothing for it and writes no status.
func TestKubeflowJobManagedByMultiKueueIsLeftAlone(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	other := makeKubeflowJob(ns, "elsewhere", 1, 1)
	other.Spec.RunPolicy.ManagedBy = ptr.To(kubeflowv1.ManagedByMultiKueue)
	if err := k8sClient.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	// A second job, managed by training-operator's value, proves the controller ran
	// meanwhile, and that it takes that value as its own.
	mine := makeKubeflowJob(ns, "here", 1, 1)
	mine.Spec.RunPolicy.ManagedBy = ptr.To(kubeflowv1.ManagedByTrainingOperator)
	if err := k8sClient.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, "here", "here-chief-0", "here-ps-0", "here-worker-0")
	waitKubeflowCondition(t, ns, "here", "Created")
	if pods, _ := jobPods(ctx, ns, "elsewhere"); len(pods) != 0 {
		t.Errorf("tfk8s created %d pods for a job managed by MultiKueue", len(pods))
	}
	got, err := getKubeflowJob(ctx, ns, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 || got.Status.StartTime != nil {
		t.Errorf("tfk8s wrote the status of a job managed by MultiKueue: %+v", got.Status)
	}
}

// TestKubeflowJobTTLDeletesIt: ttlSecondsAfterFinished deletes the kubeflow.org job
// once it succeeded, and garbage collection takes what it owned.
func TestKubeflowJobTTLDeletesIt(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	job := makeKubeflowJob(ns, "brief", 0, 1)
	delete(job.Spec.TFReplicaSpecs, "PS")
	delete(job.Spec.TFReplicaSpecs, "Chief")
	job.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](0)
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	pods := waitPods(t, ns, "brief", "brief-worker-0")
	checkKubeflowLabels(t, pods["brief-worker-0"], true) // worker 0 is the master without a chief
	kubelet.SetRunning(t, ns, "brief-worker-0")
	kubelet.SetExited(t, ns, "brief-worker-0", 0)
	testutil.Eventually(t, "the finished job to be deleted", func(ctx context.Context) (bool, error) {
		_, err := getKubeflowJob(ctx, ns, "brief")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestKubeflowJobRestartsThenFailsAtBackoffLimit: under ExitCode a killed worker is
// re-created (Restarting, TFJobRestarting); once restarts exceed backoffLimit the job
// is Failed with v1.9's reason TFJobFailed, its last condition.
func TestKubeflowJobRestartsThenFailsAtBackoffLimit(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	ctx := context.Background()
	job := makeKubeflowJob(ns, "retry", 1, 1)
	job.Spec.TFReplicaSpecs["Worker"].RestartPolicy = "ExitCode"
	job.Spec.RunPolicy.BackoffLimit = ptr.To[int32](1)
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	all := []string{"retry-chief-0", "retry-ps-0", "retry-worker-0"}
	pods := waitPods(t, ns, "retry", all...)
	kubelet.SetRunning(t, ns, all...)
	waitKubeflowCondition(t, ns, "retry", "Running")

	kubelet.SetExited(t, ns, "retry-worker-0", 137)
	waitReplaced(t, ns, "retry", "retry-worker-0", pods["retry-worker-0"].UID)
	restarting := waitKubeflowCondition(t, ns, "retry", "Restarting")
	if c := kubeflowCondition(restarting, "Restarting"); c.Reason != "TFJobRestarting" {
		t.Errorf("Restarting reason %q, want TFJobRestarting", c.Reason)
	}
	kubelet.SetRunning(t, ns, "retry-worker-0")
	waitKubeflowCondition(t, ns, "retry", "Running")
	kubelet.SetExited(t, ns, "retry-worker-0", 137)
	failed := waitKubeflowCondition(t, ns, "retry", "Failed")
	checkLastCondition(t, failed, "Failed", "TFJobFailed")
	if failed.Status.CompletionTime == nil {
		t.Error("a failed job has no completionTime")
	}
}

// TestKubeflowJobAdoptsTrainingOperatorsPods: the pods training-operator created for a
// job before it was stopped (its labels only, owned by the job, running) are adopted,
// not re-created (same UIDs), and the job finishes under tfk8s.
func TestKubeflowJobAdoptsTrainingOperatorsPods(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	if err := cp.InstallKubeflowCRD(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := makeKubeflowJob(ns, "moved", 1, 1)
	delete(job.Spec.TFReplicaSpecs, "Chief")
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for _, r := range []struct{ name, rt, role string }{{"moved-ps-0", "ps", ""}, {"moved-worker-0", "worker", "master"}} {
		pod := &corev1.Pod{
			ObjectMeta: trainingOperatorMeta(ns, job, r.name, r.rt, r.role),
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "tensorflow", Image: "tf"}}},
		}
		if err := k8sClient.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		uids[r.name] = pod.UID
		kubelet.SetRunning(t, ns, r.name)
	}

	startKubeflowReconciler(t)
	pods := waitPods(t, ns, "moved", "moved-ps-0", "moved-worker-0") // by tfk8s's label: adopted
	for name, uid := range uids {
		if pods[name].UID != uid {
			t.Errorf("%s was re-created, not adopted", name)
		}
	}
	waitKubeflowCondition(t, ns, "moved", "Running")
	kubelet.SetExited(t, ns, "moved-worker-0", 0)
	waitKubeflowCondition(t, ns, "moved", "Succeeded")
	after, err := jobPods(ctx, ns, "moved")
	if err != nil {
		t.Fatal(err)
	}
	for name, uid := range uids {
		if p := after[name]; p == nil || p.UID != uid {
			t.Errorf("%s: not the pod training-operator created (%v)", name, p)
		}
	}
}
