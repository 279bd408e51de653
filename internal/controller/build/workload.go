package build

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// WorkloadGVK is the Kueue API tfk8s writes: the Workload of each queued job.
var WorkloadGVK = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}

// The parts of a Kueue Workload's spec tfk8s writes, with Kueue's JSON names.
type (
	// WorkloadSpec is the spec of a job's Workload.
	WorkloadSpec struct {
		PodSets          []PodSet          `json:"podSets"`
		QueueName        string            `json:"queueName"`
		PriorityClassRef *PriorityClassRef `json:"priorityClassRef,omitempty"`
		Priority         *int32            `json:"priority,omitempty"`
		Active           *bool             `json:"active,omitempty"`
	}
	// PodSet is the pods of one replica type.
	PodSet struct {
		Name     string                 `json:"name"`
		Count    int32                  `json:"count"`
		Template corev1.PodTemplateSpec `json:"template"`
	}
	// PriorityClassRef names the priority class Kueue orders the Workload by.
	PriorityClassRef struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
		Name  string `json:"name"`
	}
)

// WorkloadName is the name of a job's Workload.
func WorkloadName(job *tfv1.TFJob) string { return "tfjob-" + job.Name }

// PodSetName is the pod set of a replica type: Kueue's names are DNS labels.
func PodSetName(rt tfv1.ReplicaType) string { return strings.ToLower(string(rt)) }

// Workload builds a job's Workload: one pod set per replica type, each with its
// replica count and pod template, so that Kueue reserves quota for all of them at
// once. It is owned by the job: deleting the job deletes it.
func Workload(job *tfv1.TFJob, queue string, ref *PriorityClassRef, priority *int32) (*unstructured.Unstructured, error) {
	suspended := ptr.Deref(job.Spec.RunPolicy.Suspend, false)
	spec := WorkloadSpec{QueueName: queue, PriorityClassRef: ref, Priority: priority, Active: ptr.To(!suspended)}
	for _, rt := range tfv1.ReplicaTypes {
		n := tfjob.Replicas(job.Spec.TFReplicaSpecs[rt])
		if n == 0 {
			continue
		}
		tmpl := job.Spec.TFReplicaSpecs[rt].Template.DeepCopy()
		tmpl.ObjectMeta = metav1.ObjectMeta{Labels: tmpl.Labels, Annotations: tmpl.Annotations}
		spec.PodSets = append(spec.PodSets, PodSet{Name: PodSetName(rt), Count: n, Template: *tmpl})
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(WorkloadGVK)
	u.SetName(WorkloadName(job))
	u.SetNamespace(job.Namespace)
	// Kueue names the job by this label in its messages (a preemptor's, a preemptee's).
	u.SetLabels(map[string]string{tfv1.LabelJobName: job.Name, tfv1.LabelKueueJobUID: string(job.UID)})
	u.SetOwnerReferences([]metav1.OwnerReference{OwnerRef(job)})
	// Through JSON, as Kueue reads it: the pod templates' fields by their JSON names.
	data, err := json.Marshal(spec)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding Workload spec: %w", err)
	}
	u.Object["spec"] = m
	return u, nil
}
