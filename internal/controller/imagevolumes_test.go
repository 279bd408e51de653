package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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
