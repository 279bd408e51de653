package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/scheme"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestKueueHold(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	admission := &workloadAdmission{ClusterQueue: "cq"}
	tests := []struct {
		name       string
		st         workloadStatus
		wantReason string
		wantMsg    string
	}{
		{
			name:       "new Workload",
			wantReason: tfv1.ReasonQueued,
			wantMsg:    "waiting for Kueue to admit Workload tfjob-a in LocalQueue q",
		},
		{
			name: "no quota left",
			st: workloadStatus{Conditions: []metav1.Condition{
				cond(wlQuotaReserved, metav1.ConditionFalse, "Pending", "insufficient unused quota for cpu in flavor f, 2 more needed"),
			}},
			wantReason: tfv1.ReasonQueued,
			wantMsg:    "waiting for Kueue to admit Workload tfjob-a in LocalQueue q: insufficient unused quota for cpu in flavor f, 2 more needed",
		},
		{
			name: "admitted",
			st: workloadStatus{Admission: admission, Conditions: []metav1.Condition{
				cond(wlQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
				cond(wlAdmitted, metav1.ConditionTrue, "Admitted", ""),
			}},
		},
		{
			name: "preempted, pods stopping",
			st: workloadStatus{Admission: admission, Conditions: []metav1.Condition{
				cond(wlQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
				cond(wlAdmitted, metav1.ConditionTrue, "Admitted", ""),
				cond(wlEvicted, metav1.ConditionTrue, "Preempted", "Preempted to accommodate a higher priority Workload"),
			}},
			wantReason: tfv1.ReasonPreempted,
			wantMsg: "Kueue evicted Workload tfjob-a (Preempted: Preempted to accommodate a higher priority Workload): " +
				"the job's pods are deleted and it waits in LocalQueue q to be admitted again",
		},
		{
			name: "preempted, quota given back",
			st: workloadStatus{Conditions: []metav1.Condition{
				cond(wlQuotaReserved, metav1.ConditionFalse, "Pending", "Preempted to accommodate a higher priority Workload"),
				cond(wlAdmitted, metav1.ConditionFalse, "NoReservation", ""),
				cond(wlEvicted, metav1.ConditionTrue, "Preempted", "Preempted to accommodate a higher priority Workload"),
			}},
			wantReason: tfv1.ReasonQueued,
			wantMsg:    "waiting for Kueue to admit Workload tfjob-a in LocalQueue q: Preempted to accommodate a higher priority Workload",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, msg := kueueHold("tfjob-a", &tt.st, "q")
			if diff := cmp.Diff([]string{tt.wantReason, tt.wantMsg}, []string{reason, msg}); diff != "" {
				t.Errorf("kueueHold (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnyLive(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want bool
	}{
		{"no pod", nil, false},
		{"finished pods", []*corev1.Pod{
			testutil.MakePod("a", "ns", tfv1.ReplicaTypeWorker, 0).Phase(corev1.PodSucceeded).Obj(),
			testutil.MakePod("a", "ns", tfv1.ReplicaTypeWorker, 1).Phase(corev1.PodFailed).Obj(),
		}, false},
		{"running pod", []*corev1.Pod{testutil.MakePod("a", "ns", tfv1.ReplicaTypePS, 0).Phase(corev1.PodRunning).Obj()}, true},
		{"pod being deleted", []*corev1.Pod{testutil.MakePod("a", "ns", tfv1.ReplicaTypePS, 0).Phase(corev1.PodFailed).Deleting().Obj()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := anyLive(tt.pods); got != tt.want {
				t.Errorf("anyLive = %v, want %v", got, tt.want)
			}
		})
	}
}

// A job in a Kueue queue on a cluster that does not serve Kueue's API fails with a
// condition that says so, rather than waiting for an admission that never comes.
func TestKueueUnavailable(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	r := NewTFJobReconciler(c, nil, Options{})
	job := testutil.MakeTFJob("a", "ns").Workers(1).Obj()
	job.Labels = map[string]string{tfv1.LabelKueueQueue: "q"}
	kv, err := r.readKueue(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	failed := findCondition(r.decide(&world{job: job, kueue: kv, now: metav1.Now()}).o.status, tfv1.JobFailed)
	want := "the job is labelled kueue.x-k8s.io/queue-name=q but the API server does not serve Kueue's Workload kueue.x-k8s.io/v1beta2: install Kueue, or remove the label"
	if failed == nil || failed.Reason != tfv1.ReasonKueueUnavailable || failed.Message != want {
		t.Errorf("Failed condition = %+v, want reason %s, message %q", failed, tfv1.ReasonKueueUnavailable, want)
	}
}
