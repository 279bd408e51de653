package controller

import (
	"context"
	"fmt"
	"slices"
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

// TestReplicaWaitingOnUserIsNoted: workers whose image cannot be pulled give the job a
// ReplicasWaiting condition naming them and the image, and each one Warning event,
// related to its own pod, emitted once however the kubelet's reason turns between
// ErrImagePull and ImagePullBackOff (a second emission would show as a series on the
// event); the job stays Created, not failed. A worker missing a Secret is announced
// too, and once all run, the condition turns False and a Normal event says so.
func TestReplicaWaitingOnUserIsNoted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	startController(t)
	job := testutil.MakeTFJob("pull", ns).Workers(3).Obj()
	if err := k8sClient.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	image := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Image
	waitPods(t, ns, job.Name, "pull-worker-0", "pull-worker-1", "pull-worker-2")

	kubelet.SetWaiting(t, ns, "pull-worker-0", "ErrImagePull", pullFailed)
	kubelet.SetWaiting(t, ns, "pull-worker-2", "ErrImagePull", pullFailed)
	want := "worker 0,2 cannot pull image " + image
	waitConditionMessage(t, ns, job.Name, want)
	job, err := getJob(context.Background(), ns, job.Name)
	if err != nil {
		t.Fatal(err)
	}
	if c := findCondition(job, tfv1.JobReplicasWaiting); c.Reason != tfv1.ReasonImageNotPulled || c.Message != want {
		t.Errorf("ReplicasWaiting %s: %q; want %s: %q", c.Reason, c.Message, tfv1.ReasonImageNotPulled, want)
	}
	if job.Status.State != tfv1.JobCreated {
		t.Errorf("state %s, want %s: a wait on the user is no failure", job.Status.State, tfv1.JobCreated)
	}
	waitEventsAbout(t, ns, job.UID, tfv1.ReasonImageNotPulled, "pull-worker-0", "pull-worker-2")

	// The kubelet backs off, then worker 1 waits for a Secret: its event comes after
	// any second pull event worker 0 would have had.
	kubelet.SetWaiting(t, ns, "pull-worker-0", "ImagePullBackOff", pullBackOff)
	kubelet.SetWaiting(t, ns, "pull-worker-1", "CreateContainerConfigError", `secret "s3" not found`)
	if msg := eventMessage(t, ns, job.UID, tfv1.ReasonContainerConfigInvalid); !strings.Contains(msg, "worker 1 cannot create container tensorflow") ||
		!strings.Contains(msg, `secret "s3" not found`) {
		t.Errorf("%s event %q, want it to name worker 1 and the Secret", tfv1.ReasonContainerConfigInvalid, msg)
	}

	kubelet.SetRunning(t, ns, "pull-worker-0", "pull-worker-1", "pull-worker-2")
	job = waitCondition(t, ns, job.Name, tfv1.JobRunning)
	if c := findCondition(job, tfv1.JobReplicasWaiting); c.Status != metav1.ConditionFalse || c.Reason != tfv1.ReasonWaitsCleared {
		t.Errorf("ReplicasWaiting once running: %s %s, want False %s", c.Status, c.Reason, tfv1.ReasonWaitsCleared)
	}
	eventMessage(t, ns, job.UID, tfv1.ReasonWaitsCleared)
	for _, e := range listEvents(t, ns, job.UID, tfv1.ReasonImageNotPulled, tfv1.ReasonContainerConfigInvalid) {
		if e.Series != nil {
			t.Errorf("%s event about %s emitted %d times, want once whatever the kubelet's turns", e.Reason, e.Related.Name, e.Series.Count)
		}
	}
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
	if c == nil {
		t.Fatalf("no ReplicasWaiting condition in %+v", job.Status.Conditions)
	}
	if c.Reason != tfv1.ReasonImageNotPulled || !strings.HasPrefix(c.Message, "chief 0 cannot pull image ") {
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
		if err != nil {
			return false, err
		}
		got := findCondition(job, tfv1.JobReplicasWaiting).Message
		if !strings.Contains(got, want) {
			return false, fmt.Errorf("it says %q", got)
		}
		return true, nil
	})
}

// listEvents lists the events of the given reasons on the object uid.
func listEvents(t *testing.T, ns string, uid types.UID, reasons ...string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == uid && slices.Contains(reasons, e.Reason) {
			out = append(out, e)
		}
	}
	return out
}

// waitEventsAbout waits until the object uid has an event of reason related to each of
// the pods, and to no other.
func waitEventsAbout(t *testing.T, ns string, uid types.UID, reason string, pods ...string) {
	t.Helper()
	testutil.Eventually(t, reason+" events about "+strings.Join(pods, ", "), func(ctx context.Context) (bool, error) {
		var got []string
		for _, e := range listEvents(t, ns, uid, reason) {
			if e.Related != nil {
				got = append(got, e.Related.Name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, pods) {
			return false, fmt.Errorf("events about %v", got)
		}
		return true, nil
	})
}
