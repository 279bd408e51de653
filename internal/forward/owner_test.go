package forward

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// controlledBy is a controller reference to an object of kind, name and UID.
func controlledBy(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

// notebookObjects are notebook nb-b's Deployment and ReplicaSet, its ready pod, and a
// ready pod a job labelled as nb-b's.
func notebookObjects() (*appsv1.Deployment, *appsv1.ReplicaSet, *corev1.Pod, *corev1.Pod) {
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "nb-b", Namespace: "team", UID: "uid-deploy"}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "nb-b-7d9", Namespace: "team", UID: "uid-rs",
		OwnerReferences: controlledBy("apps/v1", "Deployment", "nb-b", "uid-deploy")}}
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	labels := map[string]string{"tfk8s.io/notebook": "nb-b"}
	own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nb-b-7d9-x", Namespace: "team", UID: "uid-own", Labels: labels,
		OwnerReferences: controlledBy("apps/v1", "ReplicaSet", "nb-b-7d9", "uid-rs")}, Status: ready}
	lure := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "evil-worker-0", Namespace: "team", UID: "uid-lure", Labels: labels,
		OwnerReferences: controlledBy("tfk8s.io/v1alpha1", "TFJob", "evil", "uid-job")}, Status: ready}
	return deploy, rs, own, lure
}

// TestNotOwned checks which pods an Owner admits: its Deployment's, through a
// ReplicaSet it controls, or the one pod it names; never a pod that only carries the
// label.
func TestNotOwned(t *testing.T) {
	deploy, rs, own, lure := notebookObjects()
	otherRS := rs.DeepCopy()
	otherRS.OwnerReferences = controlledBy("apps/v1", "Deployment", "nb-a", "uid-other")
	bare := own.DeepCopy()
	bare.OwnerReferences = nil
	cases := []struct {
		name  string
		owner Owner
		pod   *corev1.Pod
		rs    *appsv1.ReplicaSet
		want  string
	}{
		{name: "the notebook's pod", owner: DeploymentOwner(deploy), pod: own, rs: rs},
		{name: "a job's pod labelled as the notebook's", owner: DeploymentOwner(deploy), pod: lure,
			want: "is not controlled by a ReplicaSet"},
		{name: "a pod with no owner", owner: DeploymentOwner(deploy), pod: bare, want: "is not controlled by a ReplicaSet"},
		{name: "another Deployment's ReplicaSet", owner: DeploymentOwner(deploy), pod: own, rs: otherRS,
			want: "is controlled by ReplicaSet nb-b-7d9, which is not Deployment nb-b's"},
		{name: "ReplicaSet gone", owner: DeploymentOwner(deploy), pod: own,
			want: "is controlled by ReplicaSet nb-b-7d9, which no longer exists"},
		{name: "the pod the command created", owner: PodOwner("uid-own"), pod: own},
		{name: "another pod of the label", owner: PodOwner("uid-own"), pod: lure, want: "is not the pod this command created"},
		{name: "no owner named", pod: own, rs: rs, want: "has no owner to check"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.owner.notOwned(tc.pod, tc.rs); got != tc.want {
				t.Errorf("notOwned = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadyPodSkipsPodsNotOwned: with a lure pod ready beside the notebook's, the
// notebook's is returned; with the lure alone, none is, and the error names it.
func TestReadyPodSkipsPodsNotOwned(t *testing.T) {
	deploy, rs, own, lure := notebookObjects()
	cs := fake.NewClientset(rs, lure, own)
	pod, err := ReadyPod(context.Background(), cs, "team", "tfk8s.io/notebook=nb-b", DeploymentOwner(deploy), time.Second, io.Discard)
	if err != nil || pod.Name != own.Name {
		t.Fatalf("ReadyPod = %v, %v; want pod %s", pod, err, own.Name)
	}

	cs = fake.NewClientset(rs, lure)
	_, err = ReadyPod(context.Background(), cs, "team", "tfk8s.io/notebook=nb-b", DeploymentOwner(deploy), 50*time.Millisecond, io.Discard)
	want := "pod evil-worker-0 carries the label but is not controlled by a ReplicaSet, so it is never forwarded to"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadyPod with only a lure: %v; want an error saying %q", err, want)
	}
}
