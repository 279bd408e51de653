package tensorboard

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestReplace checks that opening the same runs again replaces the pod left by an
// earlier tfk8s tensorboard: the pod that exists afterwards is the new one.
func TestReplace(t *testing.T) {
	ctx := context.Background()
	old := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3"})
	old.Annotations["left"] = "by an earlier tfk8s tensorboard"
	cs := fake.NewClientset(old)

	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3", TTL: 2 * time.Hour})
	if _, err := Replace(ctx, cs, pod, time.Minute); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	got, err := cs.CoreV1().Pods("team").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the pod: %v", err)
	}
	if _, left := got.Annotations["left"]; left || *got.Spec.ActiveDeadlineSeconds != 7200 {
		t.Errorf("pod after Replace: annotations %v, deadline %d; want the new pod (no annotation left, 7200)",
			got.Annotations, *got.Spec.ActiveDeadlineSeconds)
	}

	if err := Delete(ctx, cs, "team", pod.Name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := Delete(ctx, cs, "team", pod.Name); err != nil {
		t.Errorf("Delete of a pod already gone = %v, want nil", err)
	}
}

// TestReplaceWaitsForTheOldPod checks that Replace does not create the pod while the
// old one is still being deleted, and says so after its timeout.
func TestReplaceWaitsForTheOldPod(t *testing.T) {
	defer func(d time.Duration) { pollInterval = d }(pollInterval)
	pollInterval = time.Millisecond
	old := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3"})
	cs := fake.NewClientset(old)
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // terminating: the pod stays
	})
	_, err := Replace(context.Background(), cs, Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: "s3"}), 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "still exists 50ms after it was deleted") {
		t.Errorf("Replace = %v, want the old pod still existing", err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "create" {
			t.Errorf("Replace created %v while the old pod existed", a)
		}
	}
}

// TestCreateSecretReplacesTheEarlierOne checks that the Secret of an earlier pod of
// the same runs, not yet collected, gives way to the new pod's.
func TestCreateSecretReplacesTheEarlierOne(t *testing.T) {
	ctx := context.Background()
	pod := Pod(Spec{Namespace: "team", Runs: twoRuns(), Secret: PodName(twoRuns())})
	pod.UID = "old"
	cs := fake.NewClientset(OwnSecret(pod, nil))
	pod.UID = "new"
	if err := CreateSecret(ctx, cs, OwnSecret(pod, nil)); err != nil {
		t.Fatalf("CreateSecret: %v", err)
	}
	got, err := cs.CoreV1().Secrets("team").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || got.OwnerReferences[0].UID != "new" {
		t.Errorf("secret %+v (%v), want the one the new pod owns", got, err)
	}
}
