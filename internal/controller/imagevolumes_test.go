package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

func TestNodeMountsImages(t *testing.T) {
	tests := []struct {
		kubelet, runtime string
		want             bool
	}{
		{"v1.37.2", "containerd://2.4.2", true},
		{"v1.36.0", "containerd://2.1.0", true},
		{"v1.36.1-gke.1200", "containerd://2.1.4-0ubuntu1", true},
		{"v1.36.0", "cri-o://1.31.2", true},
		{"v1.35.4", "containerd://2.4.2", false}, // the feature gate may be off
		{"v1.37.2", "containerd://2.0.5", false},
		{"v1.37.2", "containerd://1.7.27", false},
		{"v1.37.2", "cri-o://1.30.0", false},
		{"v1.37.2", "docker://28.0.1", false},
		{"v1.37.2", "", false},
		{"", "containerd://2.4.2", false},
	}
	for _, tc := range tests {
		t.Run(tc.kubelet+" "+tc.runtime, func(t *testing.T) {
			info := corev1.NodeSystemInfo{KubeletVersion: tc.kubelet, ContainerRuntimeVersion: tc.runtime}
			if got := nodeMountsImages(info); got != tc.want {
				t.Errorf("nodeMountsImages(%s, %s) = %v, want %v", tc.kubelet, tc.runtime, got, tc.want)
			}
		})
	}
}

func TestEveryNodeMountsImages(t *testing.T) {
	node := func(kubelet string) corev1.Node {
		return corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet, ContainerRuntimeVersion: "containerd://2.4.2"}}}
	}
	tests := []struct {
		name  string
		nodes []corev1.Node
		want  bool
	}{
		{"no nodes", nil, false},
		{"every node", []corev1.Node{node("v1.37.2"), node("v1.36.0")}, true},
		{"one old node", []corev1.Node{node("v1.37.2"), node("v1.34.0")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := everyNodeMountsImages(tc.nodes); got != tc.want {
				t.Errorf("everyNodeMountsImages = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestInjectAgentByImageVolume: where the nodes mount images, the pod has no init
// container; the agent's image is a volume whose binary directory the TensorFlow
// container mounts read-only where the init container would have copied it, and the
// agent's emptyDir keeps its logs.
func TestInjectAgentByImageVolume(t *testing.T) {
	pod := buildPod(t, agentJob(), tfv1.ReplicaTypeWorker, 1, PodOptions{Agent: AgentOptions{Image: "registry.local/tfk8s-agent:dev", ImageVolume: true}})
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("init containers %v, want none", pod.Spec.InitContainers)
	}
	var image *corev1.Volume
	for i, v := range pod.Spec.Volumes {
		if v.Name == agentImageVolume {
			image = &pod.Spec.Volumes[i]
		}
	}
	wantVolume := &corev1.Volume{Name: "tfk8s-agent-image", VolumeSource: corev1.VolumeSource{
		Image: &corev1.ImageVolumeSource{Reference: "registry.local/tfk8s-agent:dev", PullPolicy: corev1.PullIfNotPresent}}}
	if diff := cmp.Diff(wantVolume, image); diff != "" {
		t.Errorf("the agent's image volume (-want +got):\n%s", diff)
	}
	c := pod.Spec.Containers[0]
	wantMounts := []corev1.VolumeMount{
		{Name: "tfk8s-agent-image", MountPath: "/tfk8s/bin", SubPath: "usr/local/bin", ReadOnly: true},
		{Name: "tfk8s-agent", MountPath: "/tfk8s/logs", SubPath: "logs"},
		{Name: "tfk8s-fetch-0", MountPath: "/workspace"},
		{Name: "tfk8s-fetch-1", MountPath: "/data"},
	}
	if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
		t.Errorf("TensorFlow container's mounts (-want +got):\n%s", diff)
	}
	if want := []string{"/tfk8s/bin/tfk8s-agent", "run", "--", "python3", "train.py", "--epochs=3"}; !cmp.Equal(want, c.Command) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if pod.Spec.TerminationGracePeriodSeconds == nil || *pod.Spec.TerminationGracePeriodSeconds != 120 {
		t.Errorf("grace period %v, want 120", ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 0))
	}
}
