package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// TestPodKey checks that a pod's replica is read back from the labels ConstructPod sets,
// and that pods with foreign labels are not taken for replicas.
func TestPodKey(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		want   ReplicaKey
		wantOK bool
	}{
		{
			name:   "ps 1",
			labels: map[string]string{tfv1.LabelReplicaType: "ps", tfv1.LabelReplicaIndex: "1"},
			want:   ReplicaKey{Type: tfv1.ReplicaTypePS, Index: 1}, wantOK: true,
		},
		{
			name:   "master 0",
			labels: map[string]string{tfv1.LabelReplicaType: "master", tfv1.LabelReplicaIndex: "0"},
			want:   ReplicaKey{Type: tfv1.ReplicaTypeMaster, Index: 0}, wantOK: true,
		},
		{name: "unknown type", labels: map[string]string{tfv1.LabelReplicaType: "driver", tfv1.LabelReplicaIndex: "0"}},
		{name: "type not lower-case", labels: map[string]string{tfv1.LabelReplicaType: "Worker", tfv1.LabelReplicaIndex: "0"}},
		{name: "index not a number", labels: map[string]string{tfv1.LabelReplicaType: "worker", tfv1.LabelReplicaIndex: "x"}},
		{name: "negative index", labels: map[string]string{tfv1.LabelReplicaType: "worker", tfv1.LabelReplicaIndex: "-1"}},
		{name: "no labels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := podKey(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}})
			if ok != tc.wantOK {
				t.Fatalf("podKey ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("podKey (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodKeyOfConstructedPod checks the round trip: every pod ConstructPod builds is
// recognised as the replica it was built for.
func TestPodKeyOfConstructedPod(t *testing.T) {
	job := testutil.MakeTFJob("j", "ml").Chief().PS(2).Workers(3).Evaluator().Obj()
	for _, rt := range tfv1.ReplicaTypes {
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			t.Run(tfjob.PodName(job.Name, rt, i), func(t *testing.T) {
				pod := buildPod(t, job, rt, i, PodOptions{})
				got, ok := podKey(pod)
				if !ok {
					t.Fatalf("podKey(%s) not recognised", pod.Name)
				}
				if diff := cmp.Diff(ReplicaKey{Type: rt, Index: i}, got); diff != "" {
					t.Errorf("podKey (-want +got):\n%s", diff)
				}
			})
		}
	}
}
