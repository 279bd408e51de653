package kubeflow

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
)

var t0 = metav1.NewTime(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC))

func at(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

func cond(typ string, status metav1.ConditionStatus, reason string, s int) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: reason + " message", LastTransitionTime: at(s), ObservedGeneration: 2}
}

// succeeded is the model status of a finished job: its state's condition is not the
// newest transition (FieldsIgnored is), and Running went False at the end.
func succeeded() *tfv1.TFJobStatus {
	return &tfv1.TFJobStatus{
		State: tfv1.JobSucceeded,
		Conditions: []metav1.Condition{
			cond("Created", "True", "TFJobCreated", 1),
			cond("Succeeded", "True", "TFJobSucceeded", 9),
			cond("Running", "False", "TFJobRunning", 9),
			cond("FieldsIgnored", "True", "FieldsIgnored", 10),
		},
		ReplicaStatuses: map[tfv1.ReplicaType]*tfv1.ReplicaStatus{
			"Chief": {Succeeded: 1, SucceededIndexes: "0"},
			"Worker": {Active: 1, Failed: 1, Restarts: 2, RestartsOfGonePods: 1, Disruptions: 1, FailedIndexes: "1",
				LastFailure: &tfv1.ReplicaFailure{Index: 1, Pod: "mnist-worker-1", ExitCode: 3, Reason: "Error", Time: at(8)}},
		},
		StartTime:          ptr.To(at(0)),
		CompletionTime:     ptr.To(at(9)),
		RecordedPods:       []types.UID{"a", "b"},
		ObservedGeneration: 2,
	}
}

// TestStatusFromModel checks the status Kubeflow's clients read: the state's condition
// last, a lastUpdateTime kept while a condition does not change, the selectors, and
// lastReconcileTime.
func TestStatusFromModel(t *testing.T) {
	now := at(20)
	old := &kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{
		{Type: "Created", Status: "True", Reason: "TFJobCreated", Message: "TFJobCreated message", LastUpdateTime: at(1), LastTransitionTime: at(1)},
		{Type: "Running", Status: "True", Reason: "TFJobRunning", Message: "TFJobRunning message", LastUpdateTime: at(3), LastTransitionTime: at(3)},
	}}
	got := StatusFromModel(succeeded(), old, "mnist", now)

	var types []string
	for _, c := range got.Conditions {
		types = append(types, string(c.Type)+"/"+string(c.Status))
	}
	if diff := cmp.Diff([]string{"FieldsIgnored/True", "Created/True", "Running/False", "Succeeded/True"}, types); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Conditions[1].LastUpdateTime != at(1) || got.Conditions[2].LastUpdateTime != now {
		t.Errorf("lastUpdateTime: Created %v (want %v, unchanged), Running %v (want %v, changed)",
			got.Conditions[1].LastUpdateTime, at(1), got.Conditions[2].LastUpdateTime, now)
	}
	wantSelector := "training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=tfjob-controller,training.kubeflow.org/replica-type=worker"
	if got.ReplicaStatuses["Worker"].Selector != wantSelector {
		t.Errorf("worker selector %q, want %q", got.ReplicaStatuses["Worker"].Selector, wantSelector)
	}
	if w := got.ReplicaStatuses["Worker"]; w.Active != 1 || w.Failed != 1 || w.Succeeded != 0 {
		t.Errorf("worker counts %+v, want active 1, failed 1", w)
	}
	if got.LastReconcileTime == nil || *got.LastReconcileTime != now {
		t.Errorf("lastReconcileTime %v, want %v", got.LastReconcileTime, now)
	}
}

// TestFailedReasonIsV19s: v1.9 gives every failure the reason TFJobFailed.
func TestFailedReasonIsV19s(t *testing.T) {
	st := &tfv1.TFJobStatus{State: tfv1.JobFailed, Conditions: []metav1.Condition{
		cond("Failed", "True", tfv1.ReasonBackoffLimitExceeded, 5),
		cond("Restarting", "False", tfv1.ReasonRestarting, 5),
	}}
	got := StatusFromModel(st, nil, "mnist", at(6)).Conditions
	if last := got[len(got)-1]; last.Type != "Failed" || last.Reason != "TFJobFailed" || last.Message != "BackoffLimitExceeded message" {
		t.Errorf("last condition %+v, want Failed, TFJobFailed, the model's message", last)
	}
	if got[0].Reason != tfv1.ReasonRestarting {
		t.Errorf("Restarting's reason %q changed", got[0].Reason)
	}
}

// TestStatusRoundTrip: what the controller writes in Kubeflow's shape reads back as the
// same model status, so that a reconcile with nothing new writes nothing.
func TestStatusRoundTrip(t *testing.T) {
	want := succeeded()
	got := StatusToModel(ptr.To(StatusFromModel(want, nil, "mnist", at(20))))
	got.State = want.State
	// Kubeflow's order: the state last.
	want.Conditions = orderedConditions(want)
	if diff := cmp.Diff(want, &got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestPodLabels checks Kubeflow's labels, job-role master on the chief, else worker 0.
func TestPodLabels(t *testing.T) {
	withChief := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "mnist"}, Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		"Chief": {}, "Worker": {}, "PS": {}}}}
	workersOnly := &tfv1.TFJob{ObjectMeta: metav1.ObjectMeta{Name: "mnist"}, Spec: tfv1.TFJobSpec{TFReplicaSpecs: map[tfv1.ReplicaType]*tfv1.ReplicaSpec{
		"Worker": {}, "PS": {}}}}
	tests := []struct {
		name     string
		job      *tfv1.TFJob
		rt       tfv1.ReplicaType
		index    int32
		wantRole bool
	}{
		{"the chief", withChief, "Chief", 0, true},
		{"worker 0 beside a chief", withChief, "Worker", 0, false},
		{"worker 0 without a chief", workersOnly, "Worker", 0, true},
		{"worker 1 without a chief", workersOnly, "Worker", 1, false},
		{"a PS", workersOnly, "PS", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodLabels(tc.job, tc.rt, tc.index)
			want := map[string]string{
				"training.kubeflow.org/job-name":      "mnist",
				"training.kubeflow.org/operator-name": "tfjob-controller",
				"training.kubeflow.org/replica-type":  map[tfv1.ReplicaType]string{"Chief": "chief", "Worker": "worker", "PS": "ps"}[tc.rt],
				"training.kubeflow.org/replica-index": map[int32]string{0: "0", 1: "1"}[tc.index],
			}
			if tc.wantRole {
				want["training.kubeflow.org/job-role"] = "master"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
