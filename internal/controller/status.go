package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// maxMessageLength bounds condition and failure messages.
const maxMessageLength = 512

// observation is what one reconcile learned from a job's pods: the job's new status,
// and the pods that need acting on.
type observation struct {
	// status is the job's new status: a copy of the old one with the outcomes of the
	// pods that finished since counted in.
	status *tfv1.TFJobStatus
	// pods is the pod of each replica; deterministic names allow at most one.
	pods map[ReplicaKey]*corev1.Pod
	// retry are failed pods to delete so that they are created again.
	retry []*corev1.Pod
	// release are pods whose tracking finalizer may be removed once status is written.
	release []*corev1.Pod
	// restarted counts the retryable failures counted by this observation.
	restarted int32
	// disrupted are the disrupted pods counted by this observation (disruption.go).
	disrupted []*corev1.Pod
	// failures are the permanent failures counted by this observation.
	failures []typedFailure
	// waits are the containers of live pods that wait on the user (waiting.go).
	waits []replicaWait

	// The tallies the status is summed up from once every pod is recorded.
	finished          bool
	succeeded, failed map[tfv1.ReplicaType]sets.Set[int32]
	recorded          sets.Set[types.UID]
	stillTracked      sets.Set[types.UID]
	active            map[tfv1.ReplicaType]int32
	liveRestarts      map[tfv1.ReplicaType]int32
}

// outcome is what a pod says of its replica.
type outcome int

const (
	// outcomeActive: pending or running.
	outcomeActive outcome = iota
	// outcomeSucceeded: the program exited 0.
	outcomeSucceeded
	// outcomeStopped: deleted to suspend the job; neither a failure nor a restart,
	// whatever the program exited with on SIGTERM.
	outcomeStopped
	// outcomeRetry: failed, or deleted from outside while running, and its replica is
	// run again.
	outcomeRetry
	// outcomeFailed: failed for good.
	outcomeFailed
	// outcomeDisrupted: preempted, evicted, drained or deleted before binding; its
	// replica is run again, and it counts as a disruption, not a restart.
	outcomeDisrupted
)

// classify tells a pod's outcome under its replica's restart policy, with the failure
// that goes with a retry or a failure.
func classify(spec *tfv1.ReplicaSpec, pod *corev1.Pod, key ReplicaKey, suspended bool, now metav1.Time) (outcome, *tfv1.ReplicaFailure) {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded:
		return outcomeSucceeded, nil
	case pod.DeletionTimestamp != nil && suspended:
		return outcomeStopped, nil
	case pod.Status.Phase == corev1.PodFailed && isDisruption(pod):
		// Recorded as the replica's last failure, so that describe says what happened.
		f := failureOf(pod, key, now)
		return outcomeDisrupted, &f
	case pod.DeletionTimestamp != nil && isDisruption(pod):
		return outcomeDisrupted, nil
	case pod.Status.Phase == corev1.PodFailed:
		f := failureOf(pod, key, now)
		if shouldRetry(spec.RestartPolicy, pod) {
			return outcomeRetry, &f
		}
		return outcomeFailed, &f
	case pod.DeletionTimestamp != nil:
		// Deleted before it finished, and not by tfk8s (which deletes running pods
		// only to suspend the job or clean up after it): a disruption.
		if spec.RestartPolicy == tfv1.RestartPolicyNever {
			return outcomeFailed, &tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: -1, Reason: "PodDeleted",
				Message: "the pod was deleted while running and restartPolicy is Never", Time: now}
		}
		return outcomeRetry, nil
	default:
		return outcomeActive, nil
	}
}

// observePods counts the outcome of every finished pod into a copy of the job's status. A
// pod is counted once: only while it carries the tracking finalizer and its UID is not
// yet in status.recordedPods. Once the job has finished, nothing more is counted.
func observePods(job *tfv1.TFJob, pods []*corev1.Pod, now metav1.Time) *observation {
	o := newObservation(job)
	suspended := jobSuspended(job)
	for _, pod := range pods {
		key, ok := podKey(pod)
		spec := job.Spec.TFReplicaSpecs[key.Type]
		if !ok || spec == nil || key.Index >= tfjob.Replicas(spec) {
			// Not a replica of this job's spec: nothing to count.
			if hasFinalizer(pod) {
				o.release = append(o.release, pod)
			}
			continue
		}
		o.pods[key] = pod
		out, failure := classify(spec, pod, key, suspended, now)
		o.record(pod, key, out, failure)
	}
	o.sum()
	return o
}

// newObservation starts an observation from the job's current status.
func newObservation(job *tfv1.TFJob) *observation {
	st := job.Status.DeepCopy()
	o := &observation{status: st, pods: map[ReplicaKey]*corev1.Pod{}, finished: jobFinished(st),
		succeeded: map[tfv1.ReplicaType]sets.Set[int32]{}, failed: map[tfv1.ReplicaType]sets.Set[int32]{},
		recorded: sets.New(st.RecordedPods...), stillTracked: sets.New[types.UID](),
		active: map[tfv1.ReplicaType]int32{}, liveRestarts: map[tfv1.ReplicaType]int32{}}
	if st.ReplicaStatuses == nil {
		st.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{}
	}
	for rt := range job.Spec.TFReplicaSpecs {
		if st.ReplicaStatuses[rt] == nil {
			st.ReplicaStatuses[rt] = &tfv1.ReplicaStatus{}
		}
		o.succeeded[rt] = parseIndexes(st.ReplicaStatuses[rt].SucceededIndexes)
		o.failed[rt] = parseIndexes(st.ReplicaStatuses[rt].FailedIndexes)
	}
	return o
}

// record counts one pod's outcome: a pod still active into the live tallies, a gone
// pod's outcome once, and the pods to act on.
func (o *observation) record(pod *corev1.Pod, key ReplicaKey, out outcome, failure *tfv1.ReplicaFailure) {
	rs := o.status.ReplicaStatuses[key.Type]
	tracked := hasFinalizer(pod)
	if tracked {
		o.stillTracked.Insert(pod.UID)
	}
	if out == outcomeActive {
		o.active[key.Type]++
		o.liveRestarts[key.Type] += containerRestarts(pod)
		noteContainerFailure(rs, pod, key)
		return
	}
	if tracked && !o.recorded.Has(pod.UID) && !o.finished {
		// Counted now, once: the pod's UID is recorded with the status.
		rs.RestartsOfGonePods += containerRestarts(pod)
		if failure != nil {
			rs.LastFailure = failure
		}
		switch out {
		case outcomeSucceeded:
			o.succeeded[key.Type].Insert(key.Index)
		case outcomeRetry:
			rs.RestartsOfGonePods++
			o.restarted++
		case outcomeFailed:
			o.failed[key.Type].Insert(key.Index)
			o.failures = append(o.failures, typedFailure{key.Type, failure})
		case outcomeDisrupted:
			rs.Disruptions++
			o.disrupted = append(o.disrupted, pod)
		}
		o.recorded.Insert(pod.UID)
	}
	if (out == outcomeRetry || out == outcomeDisrupted) && !o.finished && pod.Status.Phase == corev1.PodFailed &&
		pod.DeletionTimestamp == nil && !o.failed[key.Type].Has(key.Index) {
		o.retry = append(o.retry, pod)
	}
	if tracked {
		o.release = append(o.release, pod)
	}
}

// sum writes the tallies into the status.
func (o *observation) sum() {
	st := o.status
	for rt, rs := range st.ReplicaStatuses {
		rs.Active = o.active[rt]
		if o.finished {
			continue
		}
		rs.Succeeded = int32(o.succeeded[rt].Len())
		rs.Failed = int32(o.failed[rt].Len())
		rs.SucceededIndexes = formatIndexes(o.succeeded[rt])
		rs.FailedIndexes = formatIndexes(o.failed[rt])
		rs.Restarts = rs.RestartsOfGonePods + o.liveRestarts[rt]
	}
	// A recorded UID is dropped once no pod with it carries the finalizer any more.
	st.RecordedPods = sets.List(o.recorded.Intersection(o.stillTracked))
}

// failureOf describes the failure of a pod.
func failureOf(pod *corev1.Pod, key ReplicaKey, now metav1.Time) tfv1.ReplicaFailure {
	f := tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: -1, Reason: pod.Status.Reason,
		Message: truncate(pod.Status.Message), Time: now}
	if t := tfjob.Terminated(pod); t != nil {
		f.ExitCode = t.ExitCode
		if f.Reason == "" {
			f.Reason = t.Reason
		}
		if f.Message == "" {
			f.Message = lastLines(t.Message)
		}
		if !t.FinishedAt.IsZero() {
			f.Time = t.FinishedAt
		}
	}
	return f
}

// noteContainerFailure records, as the replica type's last failure, a live pod's
// container that the kubelet restarted after it failed, if it is the newest failure.
func noteContainerFailure(rs *tfv1.ReplicaStatus, pod *corev1.Pod, key ReplicaKey) {
	t := tfjob.Terminated(pod)
	if t == nil || t.ExitCode == 0 || pod.Status.Phase == corev1.PodFailed {
		return
	}
	at := restartedFailureTime(pod, t)
	if rs.LastFailure != nil && !rs.LastFailure.Time.Before(&at) {
		return
	}
	rs.LastFailure = &tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: t.ExitCode,
		Reason: t.Reason, Message: truncate(t.Message), Time: at}
}

// restartedFailureTime is when a restarted container failed: its finish time, else (a runtime
// that does not say) when the container started again, else when the pod was created.
// Never zero, which the status's schema refuses, and the same at every reconcile.
func restartedFailureTime(pod *corev1.Pod, t *corev1.ContainerStateTerminated) metav1.Time {
	if !t.FinishedAt.IsZero() {
		return t.FinishedAt
	}
	if s := tfjob.TensorFlowStatus(pod); s != nil && s.State.Running != nil && !s.State.Running.StartedAt.IsZero() {
		return s.State.Running.StartedAt
	}
	return pod.CreationTimestamp
}

// allReplicasRunning reports whether every replica of the given types that has not
// finished has a Running pod.
func allReplicasRunning(job *tfv1.TFJob, o *observation, types []tfv1.ReplicaType) bool {
	for _, rt := range types {
		rs := o.status.ReplicaStatuses[rt]
		done := parseIndexes(rs.SucceededIndexes).Union(parseIndexes(rs.FailedIndexes))
		for i := range tfjob.Replicas(job.Spec.TFReplicaSpecs[rt]) {
			if done.Has(i) {
				continue
			}
			pod := o.pods[ReplicaKey{Type: rt, Index: i}]
			if pod == nil || pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				return false
			}
		}
	}
	return true
}

// setCondition sets a condition of the job's status, keeping its transition time when
// its status does not change.
func setCondition(st *tfv1.TFJobStatus, typ tfv1.JobState, status metav1.ConditionStatus, reason, message string, now metav1.Time) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               string(typ),
		Status:             status,
		Reason:             reason,
		Message:            truncate(message),
		LastTransitionTime: now,
	})
}

// isConditionTrue reports whether the job's status has condition typ set to True.
func isConditionTrue(st *tfv1.TFJobStatus, typ tfv1.JobState) bool {
	return meta.IsStatusConditionTrue(st.Conditions, string(typ))
}

// jobFinished reports whether the job has succeeded or failed. Both are final.
func jobFinished(st *tfv1.TFJobStatus) bool {
	return isConditionTrue(st, tfv1.JobSucceeded) || isConditionTrue(st, tfv1.JobFailed)
}

// jobSuspended reports whether the user asked for the job to be suspended.
func jobSuspended(job *tfv1.TFJob) bool {
	return job.Spec.RunPolicy.Suspend != nil && *job.Spec.RunPolicy.Suspend
}

// jobState is the one-word summary of a status: its final condition, else the most
// telling of the others.
func jobState(st *tfv1.TFJobStatus) tfv1.JobState {
	for _, s := range []tfv1.JobState{tfv1.JobFailed, tfv1.JobSucceeded, tfv1.JobSuspended, tfv1.JobRestarting, tfv1.JobRunning, tfv1.JobCreated} {
		if isConditionTrue(st, s) {
			return s
		}
	}
	return ""
}

// describeFailure says in a sentence what failed.
func describeFailure(rt tfv1.ReplicaType, f tfv1.ReplicaFailure) string {
	msg := fmt.Sprintf("%s %d (pod %s) failed with exit code %d", tfjob.TaskType(rt), f.Index, f.Pod, f.ExitCode)
	if f.Reason != "" {
		msg += " (" + f.Reason + ")"
	}
	if f.Message != "" {
		msg += ": " + f.Message
	}
	return msg
}

// lastLines keeps the end of a termination message, where a log's last lines say
// what went wrong, within maxMessageLength and starting at a line.
func lastLines(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessageLength {
		return s
	}
	cut := len(s) - maxMessageLength + 3
	tail := s[cut:]
	if i := strings.IndexByte(tail, '\n'); s[cut-1] != '\n' && i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	return "..." + tail
}

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return s[:maxMessageLength-3] + "..."
}
