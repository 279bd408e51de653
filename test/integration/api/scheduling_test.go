package api

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

// withScheduling sets the job's runPolicy.schedulingPolicy.
func withScheduling(j *tfv1.TFJob, sp tfv1.SchedulingPolicy) *tfv1.TFJob {
	j.Spec.RunPolicy.SchedulingPolicy = &sp
	return j
}

// TestSchedulingFieldsTheirProviderUsesAreAccepted: the rules that refuse a scheduling
// field its provider has no use for leave alone the jobs whose provider uses it, and
// the jobs that name no provider (the controller's default decides, and warns).
func TestSchedulingFieldsTheirProviderUsesAreAccepted(t *testing.T) {
	ns := testutil.Namespace(t, k8sClient)
	cpus := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	cases := []struct {
		name string
		sp   tfv1.SchedulingPolicy
	}{
		{name: "minAvailable equal to the replicas", sp: tfv1.SchedulingPolicy{Provider: tfv1.GangProviderNative, MinAvailable: ptr.To[int32](6)}},
		{name: "minAvailable 0, every replica", sp: tfv1.SchedulingPolicy{MinAvailable: ptr.To[int32](0)}},
		{name: "queue with volcano", sp: tfv1.SchedulingPolicy{Provider: tfv1.GangProviderVolcano, Queue: "research", MinResources: cpus}},
		{name: "minResources with scheduler-plugins", sp: tfv1.SchedulingPolicy{Provider: tfv1.GangProviderSchedulerPlugins, MinResources: cpus}},
		{name: "queue and minResources with no provider", sp: tfv1.SchedulingPolicy{Queue: "research", MinResources: cpus, MinAvailable: ptr.To[int32](2)}},
		{name: "priorityClass with no provider", sp: tfv1.SchedulingPolicy{PriorityClass: "high"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := withScheduling(validJob(ns).Obj(), tc.sp)
			job.Name += "-" + string(rune('a'+i))
			if err := k8sClient.Create(context.Background(), job); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// TestKubeflowSchedulingPolicyCarriesOver creates a Kubeflow TFJob whose schedulingPolicy
// sets every field Kubeflow has, with nothing changed but its apiVersion: each is
// stored as written, under the same name.
func TestKubeflowSchedulingPolicyCarriesOver(t *testing.T) {
	job := createKubeflowManifest(t, "testdata/kubeflow-gang.yaml")
	want := &tfv1.SchedulingPolicy{
		MinAvailable:           ptr.To[int32](3),
		Queue:                  "research",
		MinResources:           corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("6Gi")},
		PriorityClass:          "high",
		ScheduleTimeoutSeconds: ptr.To[int32](600),
	}
	if diff := cmp.Diff(want, job.Spec.RunPolicy.SchedulingPolicy); diff != "" {
		t.Errorf("schedulingPolicy (-want +got):\n%s", diff)
	}
}
