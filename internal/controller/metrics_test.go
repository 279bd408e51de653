package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestRestartReason checks the reason a replica's restart is counted under.
func TestRestartReason(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"killed by a signal", worker(0).Phase(corev1.PodFailed).ExitCode(137).Obj(), "Error"},
		{"evicted: the pod's reason wins", worker(0).Phase(corev1.PodFailed).Reason("Evicted").ExitCode(137).Obj(), "Evicted"},
		{"preempted before its container ran", worker(0).Condition(corev1.DisruptionTarget).Deleting().Obj(), "Disrupted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := restartReason(tc.pod); got != tc.want {
				t.Errorf("restartReason = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGangWaitTimedOnce checks that a job is timed when all of its pods are first
// bound, also when they are Running by the same status write, and only once.
func TestGangWaitTimedOnce(t *testing.T) {
	r := &TFJobReconciler{}
	tfjob := testutil.MakeTFJob("j", "ml").UID("uid-gang-wait").Workers(2).Obj()
	tfjob.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	bound := func(i int32) *corev1.Pod {
		p := worker(i).Phase(corev1.PodRunning).Obj()
		p.Spec.NodeName = "node-1"
		return p
	}
	count := func() uint64 {
		m := &dto.Metric{}
		if err := gangWait.WithLabelValues("none").(prometheus.Histogram).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	start := count()
	unbound := observePods(tfjob, []*corev1.Pod{bound(0), worker(1).Obj()}, now)
	r.recordGangWait(tfjob, unbound, now.Time)
	if got := count() - start; got != 0 {
		t.Fatalf("timed %d jobs with a pod unbound, want 0", got)
	}
	all := observePods(tfjob, []*corev1.Pod{bound(0), bound(1)}, now)
	updateConditions(tfjob, all, now) // Running, in the status about to be written
	if findCondition(all.status, "Running") == nil {
		t.Fatal("the observation of two running workers is not Running")
	}
	r.recordGangWait(tfjob, all, now.Time)
	r.recordGangWait(tfjob, all, now.Time)
	if got := count() - start; got != 1 {
		t.Errorf("timed the job %d times once its pods were bound, want 1", got)
	}
}
