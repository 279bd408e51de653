package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
)

// The parts of Kueue's objects tfk8s reads, with Kueue's JSON names.
type (
	workloadStatus struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		Admission  *workloadAdmission `json:"admission,omitempty"`
	}
	workloadAdmission struct {
		ClusterQueue      string             `json:"clusterQueue"`
		PodSetAssignments []podSetAssignment `json:"podSetAssignments"`
	}
	podSetAssignment struct {
		Name    string                         `json:"name"`
		Flavors map[corev1.ResourceName]string `json:"flavors,omitempty"`
	}
	resourceFlavorSpec struct {
		NodeLabels  map[string]string   `json:"nodeLabels,omitempty"`
		Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	}
)

// hasQuota reports whether Kueue reserved quota for the Workload.
func (s *workloadStatus) hasQuota() bool {
	return meta.IsStatusConditionTrue(s.Conditions, wlQuotaReserved)
}

// replicaTypeOfPodSet is the replica type a pod set of the job's Workload stands for.
func replicaTypeOfPodSet(job *tfv1.TFJob, name string) (tfv1.ReplicaType, bool) {
	for rt := range job.Spec.TFReplicaSpecs {
		if build.PodSetName(rt) == name {
			return rt, true
		}
	}
	return "", false
}

// getWorkload reads the job's Workload, or nil when there is none. A Workload of an
// earlier job of the same name is an error until garbage collection deletes it.
func (r *TFJobReconciler) getWorkload(ctx context.Context, job *tfv1.TFJob) (*unstructured.Unstructured, error) {
	u := newKueueObject(WorkloadGVK.Kind)
	if err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: build.WorkloadName(job)}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Workload %s: %w", build.WorkloadName(job), err)
	}
	if ref := metav1.GetControllerOf(u); ref == nil || ref.UID != job.UID {
		return nil, fmt.Errorf("waiting for Workload %s of an earlier job of the same name to be deleted", u.GetName())
	}
	return u, nil
}

// createWorkload creates the job's Workload in queue, with the job's priority as
// readKueue read it.
func (r *TFJobReconciler) createWorkload(ctx context.Context, job *tfv1.TFJob, queue string, pr workloadPriority) (*unstructured.Unstructured, error) {
	wl, err := build.Workload(job, queue, pr.ref, pr.value)
	if err != nil {
		return nil, err
	}
	if err := r.Create(ctx, wl); err != nil {
		return nil, fmt.Errorf("creating Workload %s: %w", wl.GetName(), err)
	}
	log.FromContext(ctx).V(2).Info("Workload created", "workload", wl.GetName(), "queue", queue)
	return wl, nil
}

// workloadPriority is a job's priority for Kueue: the class it names and its value;
// the zero value for none.
type workloadPriority struct {
	ref   *build.PriorityClassRef
	value *int32
}

// readWorkloadPriority reads the job's priority for Kueue: its WorkloadPriorityClass
// (label kueue.x-k8s.io/priority-class), else the PriorityClass of its pods
// (runPolicy.schedulingPolicy.priorityClass), else none.
func (r *TFJobReconciler) readWorkloadPriority(ctx context.Context, job *tfv1.TFJob) (workloadPriority, error) {
	if name := job.Labels[tfv1.LabelKueuePriorityClass]; name != "" {
		u := newKueueObject("WorkloadPriorityClass")
		if err := r.reader().Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return workloadPriority{}, fmt.Errorf("reading WorkloadPriorityClass %s (label %s): %w", name, tfv1.LabelKueuePriorityClass, err)
		}
		v, _, err := unstructured.NestedInt64(u.Object, "value")
		if err != nil {
			return workloadPriority{}, fmt.Errorf("reading the value of WorkloadPriorityClass %s: %w", name, err)
		}
		return workloadPriority{&build.PriorityClassRef{Group: WorkloadGVK.Group, Kind: "WorkloadPriorityClass", Name: name}, ptr.To(int32(v))}, nil
	}
	if sp := job.Spec.RunPolicy.SchedulingPolicy; sp != nil && sp.PriorityClass != "" {
		pc := &schedulingv1.PriorityClass{}
		if err := r.reader().Get(ctx, client.ObjectKey{Name: sp.PriorityClass}, pc); err != nil {
			return workloadPriority{}, fmt.Errorf("reading PriorityClass %s (runPolicy.schedulingPolicy.priorityClass): %w", sp.PriorityClass, err)
		}
		return workloadPriority{&build.PriorityClassRef{Group: schedulingv1.GroupName, Kind: "PriorityClass", Name: pc.Name}, ptr.To(pc.Value)}, nil
	}
	return workloadPriority{}, nil
}

// workloadActive reports whether the Workload is active: Kueue's default when unset.
func workloadActive(wl *unstructured.Unstructured) bool {
	active, found, _ := unstructured.NestedBool(wl.Object, "spec", "active")
	return active || !found
}

// setWorkloadActive sets the Workload's spec.active: Kueue evicts an inactive Workload
// and frees its quota.
func (r *TFJobReconciler) setWorkloadActive(ctx context.Context, wl *unstructured.Unstructured, active bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"active":%t}}`, active)
	if err := r.Patch(ctx, wl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("setting Workload %s active=%t: %w", wl.GetName(), active, err)
	}
	return nil
}

// finishWorkload marks the Workload of a finished job Finished: Kueue then frees its
// quota for the jobs queued behind it.
func (r *TFJobReconciler) finishWorkload(ctx context.Context, job *tfv1.TFJob, wl *unstructured.Unstructured, st *workloadStatus, now time.Time) error {
	reason, msg := "Succeeded", "TFJob succeeded"
	if c := findCondition(&job.Status, tfv1.JobFailed); c != nil && c.Status == metav1.ConditionTrue {
		reason, msg = "Failed", c.Message
	} else if c := findCondition(&job.Status, tfv1.JobSucceeded); c != nil && c.Message != "" {
		msg = c.Message
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: wlFinished, Status: metav1.ConditionTrue,
		Reason: reason, Message: truncate(msg), LastTransitionTime: metav1.NewTime(now)})
	return r.patchWorkloadStatus(ctx, wl, map[string]any{"conditions": st.Conditions},
		"marking Workload "+wl.GetName()+" finished")
}

// releaseQuota gives back the quota of an evicted Workload whose job has stopped, as
// Kueue's job reconciler does for the jobs it runs: the reservation is cleared, and a
// preempted Workload is marked Requeued, so that Kueue queues it again.
func (r *TFJobReconciler) releaseQuota(ctx context.Context, wl *unstructured.Unstructured, st *workloadStatus, now time.Time) error {
	ev := meta.FindStatusCondition(st.Conditions, wlEvicted)
	requeued := metav1.ConditionFalse
	if ev.Reason == "Preempted" || ev.Reason == "NodeFailures" {
		requeued = metav1.ConditionTrue
	}
	t := metav1.NewTime(now)
	for _, c := range []metav1.Condition{
		{Type: wlRequeued, Status: requeued, Reason: ev.Reason, Message: ev.Message},
		{Type: wlQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: ev.Message},
		{Type: wlAdmitted, Status: metav1.ConditionFalse, Reason: "NoReservation", Message: "The workload has no reservation"},
	} {
		c.LastTransitionTime = t
		c.ObservedGeneration = wl.GetGeneration()
		meta.SetStatusCondition(&st.Conditions, c)
	}
	log.FromContext(ctx).V(2).Info("Releasing the quota of the evicted Workload", "workload", wl.GetName(), "reason", ev.Reason)
	return r.patchWorkloadStatus(ctx, wl, map[string]any{"conditions": st.Conditions, "admission": nil},
		"clearing the admission of Workload "+wl.GetName())
}

// patchWorkloadStatus merges status into the Workload's status, refused if the
// Workload changed since it was read (Kueue writes it too).
func (r *TFJobReconciler) patchWorkloadStatus(ctx context.Context, wl *unstructured.Unstructured, status map[string]any, what string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": wl.GetResourceVersion()},
		"status":   status,
	})
	if err != nil {
		return fmt.Errorf("encoding the status of Workload %s: %w", wl.GetName(), err)
	}
	if err := r.Status().Patch(ctx, wl, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// readWorkloadStatus reads the parts of a Workload's status tfk8s acts on.
func readWorkloadStatus(wl *unstructured.Unstructured) (*workloadStatus, error) {
	st := &workloadStatus{}
	if raw, ok := wl.Object["status"]; ok {
		return st, fromUnstructured(raw, st, "the status of Workload "+wl.GetName())
	}
	return st, nil
}

// flavorNames are the distinct flavors of a pod set's assignment, sorted.
func flavorNames(flavors map[corev1.ResourceName]string) []string {
	var names []string
	for _, f := range flavors {
		if !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	slices.Sort(names)
	return names
}

// newKueueObject is an empty Kueue object of kind, to read into.
func newKueueObject(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(WorkloadGVK.GroupVersion().WithKind(kind))
	return u
}

// fromUnstructured converts between Kueue's JSON and tfk8s's view of it.
func fromUnstructured(in, out any, what string) error {
	data, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}
