package kubeflow

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kubeflowv1 "github.com/tfk8s/tfk8s/api/kubeflow/v1"
	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// StatusToModel is the model of a Kubeflow TFJob's status. Conditions take the status's
// observedGeneration, which Kubeflow's conditions have no field for.
func StatusToModel(in *kubeflowv1.JobStatus) tfv1.TFJobStatus {
	out := tfv1.TFJobStatus{
		StartTime:          in.StartTime.DeepCopy(),
		CompletionTime:     in.CompletionTime.DeepCopy(),
		RecordedPods:       slices.Clone(in.RecordedPods),
		ObservedGeneration: in.ObservedGeneration,
	}
	for _, c := range in.Conditions {
		mc := metav1.Condition{
			Type:               string(c.Type),
			Status:             metav1.ConditionStatus(c.Status),
			Reason:             c.Reason,
			Message:            c.Message,
			LastTransitionTime: c.LastTransitionTime,
			ObservedGeneration: in.ObservedGeneration,
		}
		// The model keeps one condition of a type: the later one wins.
		out.Conditions = slices.DeleteFunc(out.Conditions, func(o metav1.Condition) bool { return o.Type == mc.Type })
		out.Conditions = append(out.Conditions, mc)
	}
	for key, rs := range in.ReplicaStatuses {
		rt, ok := CanonicalType(key)
		if !ok || rs == nil {
			continue
		}
		if out.ReplicaStatuses == nil {
			out.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{}
		}
		out.ReplicaStatuses[rt] = &tfv1.ReplicaStatus{
			Active: rs.Active, Succeeded: rs.Succeeded, Failed: rs.Failed,
			Restarts: rs.Restarts, Disruptions: rs.Disruptions, RestartsOfGonePods: rs.RestartsOfGonePods,
			SucceededIndexes: rs.SucceededIndexes, FailedIndexes: rs.FailedIndexes,
			ImageNotPulledIndexes: rs.ImageNotPulledIndexes, ContainerConfigInvalidIndexes: rs.ContainerConfigInvalidIndexes,
		}
		if f := rs.LastFailure; f != nil {
			out.ReplicaStatuses[rt].LastFailure = &tfv1.ReplicaFailure{Index: f.Index, Pod: f.Pod, ExitCode: f.ExitCode,
				Reason: f.Reason, Message: f.Message, Time: f.Time}
		}
	}
	return out
}

// StatusFromModel is a model status in Kubeflow's shape, for the job named job whose
// stored status is old. As under training-operator, the condition of the job's state
// comes last (kubectl's State column reads the last one), each condition keeps its
// lastUpdateTime while nothing of it changes, every replica status carries the selector
// of its pods, and lastReconcileTime is now.
func StatusFromModel(st *tfv1.TFJobStatus, old *kubeflowv1.JobStatus, job string, now metav1.Time) kubeflowv1.JobStatus {
	out := kubeflowv1.JobStatus{
		StartTime:          st.StartTime.DeepCopy(),
		CompletionTime:     st.CompletionTime.DeepCopy(),
		LastReconcileTime:  &now,
		RecordedPods:       slices.Clone(st.RecordedPods),
		ObservedGeneration: st.ObservedGeneration,
	}
	for _, c := range orderedConditions(st) {
		jc := kubeflowv1.JobCondition{
			Type:               kubeflowv1.JobConditionType(c.Type),
			Status:             corev1.ConditionStatus(c.Status),
			Reason:             kubeflowReason(c),
			Message:            c.Message,
			LastUpdateTime:     now,
			LastTransitionTime: c.LastTransitionTime,
		}
		if prev := findCondition(old, jc.Type); prev != nil && prev.Status == jc.Status && prev.Reason == jc.Reason && prev.Message == jc.Message {
			jc.LastUpdateTime = prev.LastUpdateTime
		}
		out.Conditions = append(out.Conditions, jc)
	}
	for rt, rs := range st.ReplicaStatuses {
		if rs == nil {
			continue
		}
		if out.ReplicaStatuses == nil {
			out.ReplicaStatuses = map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaStatus{}
		}
		kr := &kubeflowv1.ReplicaStatus{
			Active: rs.Active, Succeeded: rs.Succeeded, Failed: rs.Failed,
			Selector: ReplicaSelector(job, rt),
			Restarts: rs.Restarts, Disruptions: rs.Disruptions, RestartsOfGonePods: rs.RestartsOfGonePods,
			SucceededIndexes: rs.SucceededIndexes, FailedIndexes: rs.FailedIndexes,
			ImageNotPulledIndexes: rs.ImageNotPulledIndexes, ContainerConfigInvalidIndexes: rs.ContainerConfigInvalidIndexes,
		}
		if f := rs.LastFailure; f != nil {
			kr.LastFailure = &kubeflowv1.ReplicaFailure{Index: f.Index, Pod: f.Pod, ExitCode: f.ExitCode,
				Reason: f.Reason, Message: f.Message, Time: f.Time}
		}
		out.ReplicaStatuses[kubeflowv1.ReplicaType(rt)] = kr
	}
	return out
}

// stateTypes are the condition types that are a job's states; the others (FieldsIgnored,
// PodCreationRefused, ReplicasWaiting, EndRecorded) say why a job waits or what it
// ignores, and come first, so that kubectl's State column (the last) never shows them.
var stateTypes = []string{
	string(tfv1.JobCreated), string(tfv1.JobRunning), string(tfv1.JobRestarting),
	string(tfv1.JobSucceeded), string(tfv1.JobFailed), string(tfv1.JobSuspended),
}

// orderedConditions are the model's conditions, the others first, then the states by
// the time they changed, the current state last.
func orderedConditions(st *tfv1.TFJobStatus) []metav1.Condition {
	rank := func(c metav1.Condition) int {
		switch {
		case c.Type == string(st.State):
			return 2
		case slices.Contains(stateTypes, c.Type):
			return 1
		}
		return 0
	}
	out := slices.Clone(st.Conditions)
	slices.SortStableFunc(out, func(a, b metav1.Condition) int {
		if r := cmp.Compare(rank(a), rank(b)); r != 0 || rank(a) != 1 {
			return r
		}
		return a.LastTransitionTime.Compare(b.LastTransitionTime.Time)
	})
	return out
}

// kubeflowReason is the condition's reason as v1.9 gives it: a failed job's is always
// TFJobFailed, however it failed (tfk8s's own reason, BackoffLimitExceeded or
// DeadlineExceeded, and its message say how).
func kubeflowReason(c metav1.Condition) string {
	if c.Type == string(tfv1.JobFailed) && c.Status == metav1.ConditionTrue {
		return tfv1.ReasonFailed
	}
	return c.Reason
}

func findCondition(st *kubeflowv1.JobStatus, t kubeflowv1.JobConditionType) *kubeflowv1.JobCondition {
	if st == nil {
		return nil
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// ReplicaSelector selects the pods of one replica type of a job by Kubeflow's labels.
func ReplicaSelector(job string, rt tfv1.ReplicaType) string {
	return labels.SelectorFromSet(labels.Set{
		kubeflowv1.LabelJobName:      job,
		kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName,
		kubeflowv1.LabelReplicaType:  tfjob.TaskType(rt),
	}).String()
}

// PodLabels are Kubeflow's labels on the pod of one replica: job name, operator, replica
// type in lower case and index, and job-role master on the chief or master, else on
// worker 0, as training-operator v1.9 sets them.
func PodLabels(job *tfv1.TFJob, rt tfv1.ReplicaType, index int32) map[string]string {
	l := map[string]string{
		kubeflowv1.LabelJobName:      job.Name,
		kubeflowv1.LabelOperatorName: kubeflowv1.OperatorName,
		kubeflowv1.LabelReplicaType:  tfjob.TaskType(rt),
		kubeflowv1.LabelReplicaIndex: strconv.Itoa(int(index)),
	}
	hasChief := job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeChief] != nil || job.Spec.TFReplicaSpecs[tfv1.ReplicaTypeMaster] != nil
	if rt == tfv1.ReplicaTypeChief || rt == tfv1.ReplicaTypeMaster || (!hasChief && rt == tfv1.ReplicaTypeWorker && index == 0) {
		l[kubeflowv1.LabelJobRole] = kubeflowv1.JobRoleMaster
	}
	return l
}
