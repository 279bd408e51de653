package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestRecordPodHoldsTheTTL: once a job that stores in S3 finishes, the controller
// starts <job>-record, owned by the job and reading the job's storage Secret; the
// job outlives its TTL until that pod has succeeded, then the pod and the job go.
func TestRecordPodHoldsTheTTL(t *testing.T) {
	ns := runStoredJob(t, "rec", 0, 0)
	ctx := context.Background()
	waitCondition(t, ns, "rec", tfv1.JobSucceeded)

	pod := waitRecordPod(t, ns, "rec")
	created, err := getJob(ctx, ns, "rec")
	if err != nil {
		t.Fatalf("the job is gone while its end is not recorded (TTL 0): %v", err)
	}
	if !metav1.IsControlledBy(pod, created) || pod.Spec.Containers[0].Command[1] != "record" {
		t.Errorf("record pod: owners %v, command %v", pod.OwnerReferences, pod.Spec.Containers[0].Command)
	}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.Name == tfjob.EnvSecretAccessKey && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef.Name != "rec-storage") {
			t.Errorf("%s: %+v, want it from the job's Secret", e.Name, e)
		}
	}

	kubelet.WritePodStatus(t, ns, pod.Name, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	testutil.Eventually(t, "the job deleted once its end is recorded", func(ctx context.Context) (bool, error) {
		_, err := getJob(ctx, ns, "rec")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestRecordGivenUp: a record pod that keeps failing is given up on after its last
// restart: an EndNotRecorded condition and event, the pod deleted, and the TTL no
// longer held.
func TestRecordGivenUp(t *testing.T) {
	ns := runStoredJob(t, "norec", 3600, 1)
	waitCondition(t, ns, "norec", tfv1.JobFailed)
	pod := waitRecordPod(t, ns, "norec")
	kubelet.WritePodStatus(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "record", RestartCount: 2,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	})
	testutil.Eventually(t, "EndRecorded False", func(ctx context.Context) (bool, error) {
		j, err := getJob(ctx, ns, "norec")
		if err != nil {
			return false, err
		}
		c := conditionOf(j, tfv1.JobEndRecorded)
		return c.Status == "False" && c.Reason == tfv1.ReasonEndNotRecorded, nil
	})
	testutil.Eventually(t, "the record pod deleted", func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod.Name}, &corev1.Pod{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// waitRecordPod waits for the job's record pod.
func waitRecordPod(t *testing.T, ns, job string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	testutil.Eventually(t, "pod "+tfjob.RecordPodName(job), func(ctx context.Context) (bool, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: tfjob.RecordPodName(job)}, pod)
		return err == nil, client.IgnoreNotFound(err)
	})
	return pod
}

// runStoredJob runs a one-worker job that stores in S3 with its Secret, under a
// controller, until its worker exits with exitCode; it returns the namespace.
func runStoredJob(t *testing.T, name string, ttl int32, exitCode int32) string {
	t.Helper()
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob(name, ns).Workers(1).TTLSecondsAfterFinished(ttl).Artifacts("s3://tfk8s-test/runs", "/logs").Obj()
	job.Spec.Storage = &tfv1.Storage{SecretRef: corev1.LocalObjectReference{Name: name + "-storage"}}
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Command = []string{"python3", "train.py"}
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, name, name+"-worker-0")
	kubelet.SetExited(t, ns, name+"-worker-0", exitCode)
	return ns
}
