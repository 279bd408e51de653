package localcluster

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeReady(t *testing.T) {
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	node := func(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat)},
		}}}
	}
	tests := []struct {
		name  string
		node  *corev1.Node
		since time.Time
		want  bool
	}{
		{"Ready since the start", node(corev1.ConditionTrue, start.Add(time.Second)), start, true},
		{"Ready at the start's second", node(corev1.ConditionTrue, start), start, true},
		{"Ready from an earlier run", node(corev1.ConditionTrue, start.Add(-time.Minute)), start, false},
		{"adopted node: any Ready", node(corev1.ConditionTrue, start.Add(-time.Hour)), time.Time{}, true},
		{"NotReady", node(corev1.ConditionFalse, start.Add(time.Second)), start, false},
		{"no Ready condition", &corev1.Node{}, time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeReady(tc.node, tc.since); got != tc.want {
				t.Errorf("nodeReady = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckBinaries(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{compEtcd, compAPIServer, compControllerManager, compScheduler, compS3} {
		if err := os.WriteFile(bin+"/"+name, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"missing ones named", Options{BinDir: bin}, "missing from " + bin + ": registry, tfk8s-nodeinit, coredns, metrics-server, tfk8s-controller (run make build tools)"},
		{"no node needed", Options{BinDir: bin, WithoutNode: true}, "missing from " + bin + ": registry, coredns, metrics-server, tfk8s-controller (run make build tools)"},
		{"no binary directory", Options{}, "cannot find the binaries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBinaries(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
