package controller

import (
	"context"
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

const (
	pullFailed  = `failed to pull and unpack image "registry.local/tfk8s/no-such-image:0.0.0": not found`
	pullBackOff = `Back-off pulling image "registry.local/tfk8s/no-such-image:0.0.0": ErrImagePull: not found`
)

// TestReplicaWaitingOnUserIsNoted: a worker whose image cannot be pulled gives the job
// a ReplicasWaiting condition naming it and the image, and one Warning event however
// the kubelet's reason turns between ErrImagePull and ImagePullBackOff; the job stays
// Created, not failed. A worker missing a Secret is announced too, and once both run,
// the condition turns False and a Normal event says so.
func TestReplicaWaitingOnUserIsNoted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("pull", ns).Workers(2).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, "pull-worker-0", "pull-worker-1")

	kubelet.SetWaiting(t, ns, "pull-worker-0", "ErrImagePull", pullFailed)
	job = waitCondition(t, ns, job.Name, tfv1.JobReplicasWaiting)
	c := findCondition(job, tfv1.JobReplicasWaiting)
	if c.Reason != tfv1.ReasonImageNotPulled || !strings.HasPrefix(c.Message, "worker 0 cannot pull its image (pod pull-worker-0, container tensorflow: ErrImagePull: "+pullFailed) {
		t.Errorf("ReplicasWaiting %s: %q; want %s naming worker 0 and the kubelet's message", c.Reason, c.Message, tfv1.ReasonImageNotPulled)
	}
	if job.Status.State != tfv1.JobCreated {
		t.Errorf("state %s, want %s: a wait on the user is no failure", job.Status.State, tfv1.JobCreated)
	}
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonImageNotPulled); !strings.Contains(msg, "worker 0 cannot pull its image") {
		t.Errorf("%s event %q, want it to name worker 0", tfv1.ReasonImageNotPulled, msg)
	}

	// The kubelet backs off, then worker 1 waits for a Secret: its event comes after
	// any second pull event worker 0 would have had.
	kubelet.SetWaiting(t, ns, "pull-worker-0", "ImagePullBackOff", pullBackOff)
	waitConditionMessage(t, ns, job.Name, "ImagePullBackOff")
	kubelet.SetWaiting(t, ns, "pull-worker-1", "CreateContainerConfigError", `secret "s3" not found`)
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonContainerConfigInvalid); !strings.Contains(msg, "worker 1 cannot create its container") ||
		!strings.Contains(msg, `secret "s3" not found`) {
		t.Errorf("%s event %q, want it to name worker 1 and the Secret", tfv1.ReasonContainerConfigInvalid, msg)
	}
	if n := countEvents(t, ns, job.UID, tfv1.ReasonImageNotPulled); n != 1 {
		t.Errorf("%d %s events, want 1 for worker 0 whatever the kubelet's turns", n, tfv1.ReasonImageNotPulled)
	}

	kubelet.SetRunning(t, ns, "pull-worker-0", "pull-worker-1")
	job = waitCondition(t, ns, job.Name, tfv1.JobRunning)
	if c := findCondition(job, tfv1.JobReplicasWaiting); c.Status != metav1.ConditionFalse || c.Reason != tfv1.ReasonWaitsCleared {
		t.Errorf("ReplicasWaiting once running: %s %s, want False %s", c.Status, c.Reason, tfv1.ReasonWaitsCleared)
	}
	eventMessage(t, ns, job.UID, tfv1.ReasonWaitsCleared)
}

// TestKubeflowReplicaWaitingOnUser: on kubeflow.org/v1 the same condition is served,
// before the state conditions, so that kubectl's State column (the last condition)
// still shows Created.
func TestKubeflowReplicaWaitingOnUser(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startKubeflowController(t)
	job := makeKubeflowJob(ns, "pull", 1, 1)
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	waitPods(t, ns, job.Name, "pull-chief-0", "pull-ps-0", "pull-worker-0")
	kubelet.SetWaiting(t, ns, "pull-chief-0", "ImagePullBackOff", pullBackOff)
	job = waitKubeflowCondition(t, ns, job.Name, kubeflowv1.JobConditionType(tfv1.JobReplicasWaiting))
	c := kubeflowCondition(job, kubeflowv1.JobConditionType(tfv1.JobReplicasWaiting))
	if c.Reason != tfv1.ReasonImageNotPulled || !strings.HasPrefix(c.Message, "chief 0 cannot pull its image") {
		t.Errorf("ReplicasWaiting %s: %q; want %s naming chief 0", c.Reason, c.Message, tfv1.ReasonImageNotPulled)
	}
	if last := job.Status.Conditions[len(job.Status.Conditions)-1]; last.Type != kubeflowv1.JobConditionType(tfv1.JobCreated) {
		t.Errorf("last condition %s, want Created: kubectl's State column reads it", last.Type)
	}
}

// waitConditionMessage waits until the job's ReplicasWaiting condition says want.
func waitConditionMessage(t *testing.T, ns, name, want string) {
	t.Helper()
	testutil.Eventually(t, "ReplicasWaiting to say "+want, func(ctx context.Context) (bool, error) {
		job, err := getJob(ctx, ns, name)
		return err == nil && strings.Contains(findCondition(job, tfv1.JobReplicasWaiting).Message, want), err
	})
}

// countEvents counts the events of reason on the object uid.
func countEvents(t *testing.T, ns string, uid types.UID, reason string) int {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.UID == uid && e.Reason == reason {
			n++
		}
	}
	return n
}
