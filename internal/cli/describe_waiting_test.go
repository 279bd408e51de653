package cli

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDescribeWaiting: a container that waits on the user is named with its reason and
// message, init containers first; the waits every container passes through are not.
func TestDescribeWaiting(t *testing.T) {
	waiting := func(name, reason, message string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
	}
	pod := func(name string, init, main []corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: init, ContainerStatuses: main}}
	}
	pull := `Back-off pulling image "127.0.0.1:5000/nope:1": ErrImagePull: not found`
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{name: "no pods", want: ""},
		{
			name: "creating and initializing say nothing",
			pods: []corev1.Pod{pod("j-worker-0", []corev1.ContainerStatus{waiting("tfk8s-agent", "PodInitializing", "")},
				[]corev1.ContainerStatus{waiting("tensorflow", "ContainerCreating", "")})},
			want: "",
		},
		{
			name: "an image that cannot be pulled, init container first, message on one line",
			pods: []corev1.Pod{
				pod("j-ps-0", nil, []corev1.ContainerStatus{{Name: "tensorflow", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}),
				pod("j-worker-0", []corev1.ContainerStatus{waiting("setup", "ErrImagePull", "rpc error:\n  not found")},
					[]corev1.ContainerStatus{waiting("tensorflow", "ImagePullBackOff", pull)}),
			},
			want: "Waiting:\n" +
				"  j-worker-0 container setup: ErrImagePull: rpc error: not found\n" +
				"  j-worker-0 container tensorflow: ImagePullBackOff: " + pull + "\n",
		},
		{
			name: "a reason without a message",
			pods: []corev1.Pod{pod("j-worker-1", nil, []corev1.ContainerStatus{waiting("tensorflow", "CreateContainerConfigError", "")})},
			want: "Waiting:\n  j-worker-1 container tensorflow: CreateContainerConfigError\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			describeWaiting(&buf, tc.pods)
			if diff := cmp.Diff(tc.want, buf.String()); diff != "" {
				t.Errorf("describeWaiting (-want +got):\n%s", diff)
			}
		})
	}
}
