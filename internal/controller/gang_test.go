package controller

import (
	"strings"
	"testing"
	"time"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestParseGangProvider(t *testing.T) {
	for in, want := range map[string]tfv1.GangProvider{"": "", "none": "", "native": "native", "volcano": "volcano", "scheduler-plugins": "scheduler-plugins"} {
		if got, err := ParseGangProvider(in); err != nil || got != want {
			t.Errorf("ParseGangProvider(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseGangProvider("kueue"); err == nil || !strings.Contains(err.Error(), "kueue") {
		t.Errorf("ParseGangProvider(kueue) = %v, want an error naming it", err)
	}
}

// TestScheduleTimedOut checks when a job's pods have waited too long for a node, and
// that the message names each unbound pod with the scheduler's reason.
func TestScheduleTimedOut(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(rt tfv1.ReplicaType, index int32, age time.Duration, node, schedMsg string) *corev1.Pod {
		p := testutil.MakePod("mnist", "ml", rt, index).Obj()
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		p.Spec.NodeName = node
		if schedMsg != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: schedMsg}}
		}
		return p
	}
	cases := []struct {
		name     string
		timeout  *int32
		pods     []*corev1.Pod
		wantMsg  string
		wantWait time.Duration
	}{{
		name: "no timeout", pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0, time.Hour, "", "")},
	}, {
		name: "waiting", timeout: ptr.To[int32](60),
		pods:     []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0, 20*time.Second, "", ""), pod(tfv1.ReplicaTypeWorker, 1, 50*time.Second, "", "")},
		wantWait: 11 * time.Second,
	}, {
		// Creation is recorded to the second: a timestamp 60.5s old may be a pod 59.6s old.
		name: "timestamp truncated", timeout: ptr.To[int32](60),
		pods:     []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0, 60500*time.Millisecond, "", "")},
		wantWait: 500 * time.Millisecond,
	}, {
		name: "all bound", timeout: ptr.To[int32](60), pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 0, time.Hour, "node-1", "")},
	}, {
		name: "timed out", timeout: ptr.To[int32](60),
		pods: []*corev1.Pod{pod(tfv1.ReplicaTypeWorker, 1, 62*time.Second, "", "0/1 nodes are available: 1 Insufficient cpu."),
			pod(tfv1.ReplicaTypeWorker, 0, 10*time.Second, "", ""), pod(tfv1.ReplicaTypePS, 0, time.Hour, "node-1", "")},
		wantMsg: "2 of the job's pods were not scheduled within scheduleTimeoutSeconds (60s): " +
			"mnist-worker-0 (no scheduler has reported on it); mnist-worker-1 (0/1 nodes are available: 1 Insufficient cpu.)",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := fixtures.GangJob(&tfv1.SchedulingPolicy{ScheduleTimeoutSeconds: tc.timeout})
			msg, wait := scheduleTimedOut(job, tc.pods, now)
			if msg != tc.wantMsg || wait != tc.wantWait {
				t.Errorf("scheduleTimedOut = %q, %v; want %q, %v", msg, wait, tc.wantMsg, tc.wantWait)
			}
		})
	}
}
