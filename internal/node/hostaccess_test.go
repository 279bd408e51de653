package node

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestHostPathAllowed(t *testing.T) {
	allowed := []string{"/data", "/srv/tf/"}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/data", true},
		{"/data/mnist", true},
		{"/srv/tf/x", true},
		{"/database", false},
		{"/data/../etc", false},
		{"/", false},
		{"/etc", false},
	} {
		if got := hostPathAllowed(tc.path, allowed); got != tc.want {
			t.Errorf("hostPathAllowed(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if hostPathAllowed("/data", nil) {
		t.Error("with no allowed paths, /data is allowed")
	}
}

func TestHiddenPaths(t *testing.T) {
	got := hiddenPaths("/home/ann", "/var/lib/tfk8s-node", []string{"/opt/cluster"}, []string{"/root/src/tfk8s/bin", "/data"})
	for _, want := range []string{"/etc/shadow", "/etc/sudoers.d", "/home/ann/.tfk8s", "/home/ann/.kube", "/var/lib/tfk8s-node", "/opt/cluster"} {
		if !slices.Contains(got, want) {
			t.Errorf("hiddenPaths lacks %s: %v", want, got)
		}
	}
	// The tfk8s binaries are mounted under /root: hiding /root would hide them.
	if slices.Contains(got, "/root") {
		t.Errorf("hiddenPaths hides /root, which holds a mount: %v", got)
	}
}

func TestShutdownGrace(t *testing.T) {
	pod := func(grace *int64) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: grace}}
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		limit time.Duration
		want  time.Duration
	}{
		{"the agent's 120 s, no cap", pod(ptr.To[int64](120)), 0, 120 * time.Second},
		{"unset: the API server's default", pod(nil), 0, 30 * time.Second},
		{"capped", pod(ptr.To[int64](120)), 10 * time.Second, 10 * time.Second},
		{"shorter than the cap", pod(ptr.To[int64](2)), 10 * time.Second, 2 * time.Second},
	} {
		if got := shutdownGrace(tc.pod, tc.limit); got != tc.want {
			t.Errorf("%s: shutdownGrace = %v, want %v", tc.name, got, tc.want)
		}
	}
}
