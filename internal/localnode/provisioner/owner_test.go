package provisioner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// claimPod is a pod of namespace team mounting claim data (or, with ephemeral, its
// own ephemeral volume scratch), of fsGroup group (nil: none), in phase.
func claimPod(name string, group *int64, phase corev1.PodPhase, ephemeral bool) corev1.Pod {
	vol := corev1.Volume{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	if ephemeral {
		vol = corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec:       corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: group}, Volumes: []corev1.Volume{vol}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestOwnerFor(t *testing.T) {
	shared := dirOwner{GID: 100, Mode: sharedMode}
	root := dirOwner{Mode: rootMode}
	other := claimPod("other", ptr.To[int64](100), corev1.PodPending, false)
	other.Namespace = "elsewhere"
	tests := []struct {
		name  string
		claim string
		pods  []corev1.Pod
		want  dirOwner
	}{
		{name: "the first consumer's fsGroup", claim: "data", pods: []corev1.Pod{claimPod("nb", ptr.To[int64](100), corev1.PodPending, false)}, want: shared},
		{
			name: "two consumers of one fsGroup, a finished one of another",
			pods: []corev1.Pod{
				claimPod("a", ptr.To[int64](100), corev1.PodPending, false),
				claimPod("b", ptr.To[int64](100), corev1.PodRunning, false),
				claimPod("old", ptr.To[int64](7), corev1.PodSucceeded, false),
			},
			claim: "data", want: shared,
		},
		{name: "a generic ephemeral volume's pod", claim: "job-0-scratch", pods: []corev1.Pod{claimPod("job-0", ptr.To[int64](100), corev1.PodPending, true)}, want: shared},
		{name: "a consumer without fsGroup: root's", claim: "data", pods: []corev1.Pod{claimPod("tf", nil, corev1.PodPending, false)}, want: root},
		{
			name:  "consumers of two fsGroups: root's",
			claim: "data",
			pods:  []corev1.Pod{claimPod("a", ptr.To[int64](100), corev1.PodPending, false), claimPod("b", ptr.To[int64](200), corev1.PodPending, false)},
			want:  root,
		},
		{name: "no consumer found: root's", claim: "data", pods: []corev1.Pod{other}, want: root},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: tc.claim, Namespace: "team"}}
			if diff := cmp.Diff(tc.want, ownerFor(claim, tc.pods)); diff != "" {
				t.Errorf("owner of the claim's directory (-want +got):\n%s", diff)
			}
		})
	}
}
