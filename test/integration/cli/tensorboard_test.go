package cli

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestTensorBoard: tfk8s tensorboard refuses a job without a TensorBoard and says how
// to get one; for a job with one, it asks the controller to keep it (the annotation),
// and says what it waits for, and for how long, when no pod serves. There is no node in
// this suite: the forward itself is tested against a real node in
// test/integration/node (TestPortForward) and end to end in test/e2e.
func TestTensorBoard(t *testing.T) {
	f := newFixture(t)
	code := writeTree(t, map[string]string{"train.py": "print(1)\n"})
	f.mustSucceed("submit", code, "--name", "plain", "--image", "tf", "--", "python3", "train.py")
	f.mustSucceed("submit", code, "--name", "mnist", "--image", "tf", "--tensorboard", "--artifacts", "logs", "--", "python3", "train.py")

	t.Run("RefusesAJobWithoutTensorBoard", func(t *testing.T) {
		r := f.tfk8s("tensorboard", "plain")
		want := "job " + f.ns + "/plain has no TensorBoard (spec.tensorboard.enabled is false): submit it with --tensorboard"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want an error %q:\n%s", want, r)
		}
		if a := f.getJob("plain").Annotations[tfv1.AnnotationTensorBoardRequested]; a != "" {
			t.Errorf("a refused job was annotated %s=%s", tfv1.AnnotationTensorBoardRequested, a)
		}
	})

	t.Run("RefusesATensorBoardWithNothingToRead", func(t *testing.T) {
		objects := len(f.objects())
		r := f.tfk8s("submit", code, "--name", "nosummaries", "--image", "tf", "--tensorboard", "--", "python3", "train.py")
		want := "--tensorboard: the job stores no summaries for it to show; add --artifacts"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want an error %q:\n%s", want, r)
		}
		if jobs := f.jobs(); slices.Contains(jobs, "nosummaries") {
			t.Errorf("the refused job was created: jobs %v", jobs)
		}
		if n := len(f.objects()); n != objects {
			t.Errorf("the refused job stored %d objects in S3", n-objects)
		}
	})

	t.Run("UnscheduledPodTimesOutNamingWhatIsMissing", func(t *testing.T) {
		before := time.Now().Add(-time.Second).Truncate(time.Second)
		// The controller's Deployment has a pod, which no node runs in this suite.
		r := f.tfk8s("tensorboard", "mnist", "--timeout", "2s")
		want := regexp.MustCompile(`error: waiting for the TensorBoard of job ` + f.ns + `/mnist: no ready pod of Deployment mnist-tensorboard labelled tfk8s.io/tensorboard=mnist in namespace ` + f.ns +
			` after 2s: pod mnist-tensorboard-\S+ is Pending, not scheduled to a node yet\n`)
		if r.code == 0 || !want.MatchString(r.stderr) {
			t.Errorf("want an error matching %s:\n%s", want, r)
		}
		requested, err := time.Parse(time.RFC3339, f.getJob("mnist").Annotations[tfv1.AnnotationTensorBoardRequested])
		if err != nil || requested.Before(before) || requested.After(time.Now()) {
			t.Errorf("annotation %s = %v (%v), want the time of the command", tfv1.AnnotationTensorBoardRequested, requested, err)
		}
	})

	t.Run("UnreadyPodNamedInTheTimeout", func(t *testing.T) {
		// A pod that only carries the label stands for a job's pod labelled as the
		// TensorBoard: named, and never forwarded to.
		lure := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "mnist-tensorboard-x", Namespace: f.ns, Labels: map[string]string{tfv1.LabelTensorBoard: "mnist"}},
			Spec: corev1.PodSpec{
				NodeName:                      "node-a",
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers:                    []corev1.Container{{Name: "tensorboard", Image: "tf"}},
			},
		}
		if err := k8sClient.Create(context.Background(), lure); err != nil {
			t.Fatal(err)
		}
		ready := func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		kubelet().WritePodStatus(t, f.ns, lure.Name, ready)
		pod := f.tensorBoardPod("mnist")
		kubelet().Bind(t, f.ns, pod.Name, "node-a")
		kubelet().WritePodStatus(t, f.ns, pod.Name, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		})
		r := f.tfk8s("tensorboard", "mnist", "--timeout", "1s")
		if want := "pod " + pod.Name + " is Running, not ready"; r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("want an error %q:\n%s", want, r)
		}
		if want := "pod mnist-tensorboard-x carries the label but is not controlled by a ReplicaSet, so it is never forwarded to"; !strings.Contains(r.stderr, want) {
			t.Errorf("want the lure named: %q:\n%s", want, r)
		}
		if want := "Waiting for a ready pod of Deployment mnist-tensorboard labelled tfk8s.io/tensorboard=mnist in namespace " + f.ns + ": "; !strings.Contains(r.stderr, want) {
			t.Errorf("want the wait announced as %q:\n%s", want, r)
		}

		// Ready, on a node that does not exist: the forward's failure is reported,
		// naming the job, instead of a URL nobody answers.
		kubelet().WritePodStatus(t, f.ns, pod.Name, ready)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r = f.tfk8sContext(ctx, "tensorboard", "mnist", "--timeout", "1s")
		if want := "forwarding to TensorBoard of job " + f.ns + "/mnist: forwarding to port 6006 of pod " + f.ns + "/" + pod.Name + ": "; r.code == 0 || !strings.Contains(r.stderr, want) || strings.Contains(r.stdout, "http://") {
			t.Errorf("want an error %q and no URL:\n%s", want, r)
		}
		t.Logf("tfk8s tensorboard mnist, its pod ready on a node that does not exist:\n%s", r)
	})
}

// tensorBoardPod waits for the pod of the job's TensorBoard Deployment.
func (f *fixture) tensorBoardPod(job string) *corev1.Pod {
	f.t.Helper()
	var pod *corev1.Pod
	testutil.Eventually(f.t, "the pod of "+job+"'s TensorBoard", func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		err := k8sClient.List(ctx, list, client.InNamespace(f.ns), client.MatchingLabels{tfv1.LabelTensorBoard: job})
		for i := range list.Items {
			if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.Kind == "ReplicaSet" {
				pod = &list.Items[i]
			}
		}
		return pod != nil, err
	})
	return pod
}
