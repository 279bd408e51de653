package build

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/testing/testutil"
)

func TestConstructWorkload(t *testing.T) {
	job := testutil.MakeTFJob("a", "ns").PS(1).Workers(2).Evaluator().Obj()
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeEvaluator].Replicas = ptr.To[int32](0)
	job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeWorker].Template.Spec.Containers[0].Resources.Requests =
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	wl, err := Workload(job, "q", &PriorityClassRef{Group: "kueue.x-k8s.io", Kind: "WorkloadPriorityClass", Name: "high"}, ptr.To[int32](1000))
	if err != nil {
		t.Fatal(err)
	}
	spec := WorkloadSpec{}
	data, err := json.Marshal(wl.Object["spec"])
	if err == nil {
		err = json.Unmarshal(data, &spec)
	}
	if err != nil {
		t.Fatal(err)
	}
	type podSetSummary struct {
		Name  string
		Count int32
		CPU   string
	}
	var got []podSetSummary
	for _, ps := range spec.PodSets {
		cpu := ps.Template.Spec.Containers[0].Resources.Requests.Cpu()
		got = append(got, podSetSummary{ps.Name, ps.Count, cpu.String()})
	}
	want := []podSetSummary{{"ps", 1, "0"}, {"worker", 2, "2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod sets (-want +got):\n%s", diff)
	}
	if spec.QueueName != "q" || ptr.Deref(spec.Priority, 0) != 1000 || spec.PriorityClassRef.Name != "high" || !ptr.Deref(spec.Active, false) {
		t.Errorf("spec = queue %q priority %v class %+v active %v; want q, 1000, high, true",
			spec.QueueName, spec.Priority, spec.PriorityClassRef, spec.Active)
	}
	if wl.GetName() != "tfjob-a" || metav1.GetControllerOf(wl) == nil || metav1.GetControllerOf(wl).Name != "a" {
		t.Errorf("Workload %s owned by %v, want tfjob-a owned by TFJob a", wl.GetName(), wl.GetOwnerReferences())
	}
	if wl.GroupVersionKind() != WorkloadGVK {
		t.Errorf("kind %v, want %v", wl.GroupVersionKind(), WorkloadGVK)
	}
}
