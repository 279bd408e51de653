package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/fixtures"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// TestPodOwnerTellsTheAPIsApart: the pod index keys a pod by its job's API as well as
// its name, so a kubeflow.org job never reads the pods of a tfk8s.io job of its name.
func TestPodOwnerTellsTheAPIsApart(t *testing.T) {
	tests := []struct {
		name string
		ref  metav1.OwnerReference
		want []string
	}{
		{"tfk8s.io", metav1.OwnerReference{APIVersion: "tfk8s.io/v1alpha1", Kind: "TFJob", Name: "mnist", Controller: ptr.To(true)}, []string{"mnist"}},
		{"kubeflow.org", metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "TFJob", Name: "mnist", Controller: ptr.To(true)}, []string{"kubeflow.org/mnist"}},
		{"another group", metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "TFJob", Name: "mnist", Controller: ptr.To(true)}, nil},
		{"another kind", metav1.OwnerReference{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Name: "mnist", Controller: ptr.To(true)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{tc.ref}}
			if diff := cmp.Diff(tc.want, podOwner(obj)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := jobKey(fixtures.KubeflowModel()); got != "kubeflow.org/mnist" {
		t.Errorf("jobKey of the kubeflow.org job: %q", got)
	}
}

// TestManagedByTFK8s: training-operator's own value is tfk8s's for a kubeflow.org job
// only; MultiKueue's never is.
func TestManagedByTFK8s(t *testing.T) {
	tests := []struct {
		name      string
		kubeflow  bool
		managedBy *string
		want      bool
	}{
		{"tfk8s.io, unset", false, nil, true},
		{"tfk8s.io, tfk8s", false, ptr.To(tfv1.ControllerName), true},
		{"tfk8s.io, training-operator", false, ptr.To(kubeflowv1.ManagedByTrainingOperator), false},
		{"kubeflow.org, unset", true, nil, true},
		{"kubeflow.org, training-operator", true, ptr.To(kubeflowv1.ManagedByTrainingOperator), true},
		{"kubeflow.org, MultiKueue", true, ptr.To(kubeflowv1.ManagedByMultiKueue), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := testutil.MakeTFJob("mnist", "ml").Workers(1).Obj()
			if tc.kubeflow {
				job = fixtures.KubeflowModel()
			}
			job.Spec.RunPolicy.ManagedBy = tc.managedBy
			if got := managedByTFK8s(job); got != tc.want {
				t.Errorf("managedByTFK8s = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKueueLeavesKubeflowJobsAlone: a kubeflow.org job labelled for a Kueue queue is
// not queued by tfk8s (no Workload, no wait): Kueue's own kubeflow.org/tfjob
// integration does that through runPolicy.suspend. The reconciler has no client: any
// look for Kueue's API would fail the test.
func TestKueueLeavesKubeflowJobsAlone(t *testing.T) {
	job := fixtures.KubeflowModel()
	job.Labels = map[string]string{tfv1.LabelKueueQueue: "team-a"}
	r := NewTFJobReconciler(nil, nil, Options{})
	v, err := r.readKueue(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if v.queue != "" || v.served || v.wl != nil {
		t.Errorf("tfk8s queues a kubeflow.org job: queue %q, served %v, workload %v", v.queue, v.served, v.wl)
	}
}

// TestRivalHoldsName: of a tfk8s.io and a kubeflow.org job of one name, the one that
// started keeps the name; else the one created first; at the same second, the
// tfk8s.io one. Exactly one of two not started runs.
func TestRivalHoldsName(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	for _, tc := range []struct {
		name                        string
		mine, theirs                metav1.Time
		mineKubeflow, theirsStarted bool
		want                        bool
	}{
		{"the rival came first", t1, t0, false, false, true},
		{"this job came first", t0, t1, false, false, false},
		{"the rival came later but started", t0, t1, true, true, true},
		{"same second, this job kubeflow.org", t0, t0, true, false, true},
		{"same second, this job tfk8s.io", t0, t0, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rivalHoldsName(tc.mine, tc.theirs, tc.mineKubeflow, tc.theirsStarted); got != tc.want {
				t.Errorf("rivalHoldsName = %v, want %v", got, tc.want)
			}
			if !tc.theirsStarted {
				// Seen from the rival, not started either: exactly one holds the name.
				if other := rivalHoldsName(tc.theirs, tc.mine, !tc.mineKubeflow, false); other == tc.want {
					t.Errorf("both jobs, or neither, hold the name (%v from either side)", other)
				}
			}
		})
	}
}
