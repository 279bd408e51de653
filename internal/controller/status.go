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
	// failures are the permanent failures counted by this observation.
	failures []tfv1.ReplicaFailure
	// failedTypes are the replica types of those failures, index by index.
	failedTypes []tfv1.ReplicaType
}

// observe counts the outcome of every finished pod into a copy of the job's status. A
// pod is counted once: only while it carries the tracking finalizer and its UID is not
// yet in status.recordedPods. Once the job has finished, nothing more is counted.
func observe(job *tfv1.TFJob, pods []*corev1.Pod, now metav1.Time) *observation {
	o := &observation{status: job.Status.DeepCopy(), pods: map[ReplicaKey]*corev1.Pod{}}
	st := o.status
	finished := jobFinished(st)
	suspended := jobSuspended(job)
	if st.ReplicaStatuses == nil {
		st.ReplicaStatuses = map[tfv1.ReplicaType]*tfv1.ReplicaStatus{}
	}
	succeeded := map[tfv1.ReplicaType]sets.Set[int32]{}
	failed := map[tfv1.ReplicaType]sets.Set[int32]{}
	for rt := range job.Spec.TFReplicaSpecs {
		if st.ReplicaStatuses[rt] == nil {
			st.ReplicaStatuses[rt] = &tfv1.ReplicaStatus{}
		}
		succeeded[rt] = parseIndexes(st.ReplicaStatuses[rt].SucceededIndexes)
		failed[rt] = parseIndexes(st.ReplicaStatuses[rt].FailedIndexes)
	}
	recorded := sets.New(st.RecordedPods...)
	stillTracked := sets.New[types.UID]()
	active := map[tfv1.ReplicaType]int32{}
	liveRestarts := map[tfv1.ReplicaType]int32{}

	for _, pod := range pods {
		tracked := hasFinalizer(pod)
		if tracked {
			stillTracked.Insert(pod.UID)
		}
		key, ok := podKey(pod)
		spec := job.Spec.TFReplicaSpecs[key.Type]
		if !ok || spec == nil || key.Index >= replicas(spec) {
			// Not a replica of this job's spec: nothing to count.
			if tracked {
				o.release = append(o.release, pod)
			}
			continue
		}
		o.pods[key] = pod
		rs := st.ReplicaStatuses[key.Type]
		uncounted := tracked && !recorded.Has(pod.UID) && !finished

		switch {
		case pod.Status.Phase == corev1.PodSucceeded:
			if uncounted {
				succeeded[key.Type].Insert(key.Index)
				rs.RestartsOfGonePods += containerRestarts(pod)
			}
		case pod.DeletionTimestamp != nil && suspended && pod.Status.Phase != corev1.PodSucceeded:
			// Deleted to suspend the job: neither a failure nor a restart, whatever the
			// program exited with on SIGTERM; its container restarts stay counted.
			if uncounted {
				rs.RestartsOfGonePods += containerRestarts(pod)
			}
		case pod.Status.Phase == corev1.PodFailed:
			retry := !finished && shouldRetry(spec.RestartPolicy, pod)
			if uncounted {
				rs.RestartsOfGonePods += containerRestarts(pod)
				failure := failureOf(pod, key, now)
				rs.LastFailure = &failure
				if retry {
					rs.RestartsOfGonePods++
					o.restarted++
				} else {
					failed[key.Type].Insert(key.Index)
					o.failures = append(o.failures, failure)
					o.failedTypes = append(o.failedTypes, key.Type)
				}
			}
			if retry && !failed[key.Type].Has(key.Index) && pod.DeletionTimestamp == nil {
				o.retry = append(o.retry, pod)
			}
		case pod.DeletionTimestamp != nil:
			// Deleted before it finished, and not by tfk8s (which deletes running pods
			// only to suspend the job or clean up after it): a disruption.
			if uncounted {
				rs.RestartsOfGonePods += containerRestarts(pod)
				if spec.RestartPolicy == tfv1.RestartPolicyNever {
					failure := tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: -1, Reason: "PodDeleted",
						Message: "the pod was deleted while running and restartPolicy is Never", Time: now}
					rs.LastFailure = &failure
					failed[key.Type].Insert(key.Index)
					o.failures = append(o.failures, failure)
					o.failedTypes = append(o.failedTypes, key.Type)
				} else {
					rs.RestartsOfGonePods++
					o.restarted++
				}
			}
		default:
			active[key.Type]++
			liveRestarts[key.Type] += containerRestarts(pod)
			noteContainerFailure(rs, pod, key)
		}
		if uncounted && (isTerminal(pod) || pod.DeletionTimestamp != nil) {
			recorded.Insert(pod.UID)
		}
		if tracked && (isTerminal(pod) || pod.DeletionTimestamp != nil) {
			o.release = append(o.release, pod)
		}
	}

	for rt, rs := range st.ReplicaStatuses {
		rs.Active = active[rt]
		if finished {
			continue
		}
		rs.Succeeded = int32(succeeded[rt].Len())
		rs.Failed = int32(failed[rt].Len())
		rs.SucceededIndexes = formatIndexes(succeeded[rt])
		rs.FailedIndexes = formatIndexes(failed[rt])
		rs.Restarts = rs.RestartsOfGonePods + liveRestarts[rt]
	}
	// A recorded UID is dropped once no pod with it carries the finalizer any more.
	st.RecordedPods = sets.List(recorded.Intersection(stillTracked))
	return o
}

// failureOf describes the failure of a pod.
func failureOf(pod *corev1.Pod, key ReplicaKey, now metav1.Time) tfv1.ReplicaFailure {
	f := tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: -1, Reason: pod.Status.Reason,
		Message: truncate(pod.Status.Message), Time: now}
	if t := terminatedState(pod); t != nil {
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
	t := terminatedState(pod)
	if t == nil || t.ExitCode == 0 || pod.Status.Phase == corev1.PodFailed {
		return
	}
	if rs.LastFailure != nil && !rs.LastFailure.Time.Before(&t.FinishedAt) {
		return
	}
	rs.LastFailure = &tfv1.ReplicaFailure{Index: key.Index, Pod: pod.Name, ExitCode: t.ExitCode,
		Reason: t.Reason, Message: truncate(t.Message), Time: t.FinishedAt}
}

// allReplicasRunning reports whether every replica of the given types that has not
// finished has a Running pod.
func allReplicasRunning(job *tfv1.TFJob, o *observation, types []tfv1.ReplicaType) bool {
	for _, rt := range types {
		rs := o.status.ReplicaStatuses[rt]
		done := parseIndexes(rs.SucceededIndexes).Union(parseIndexes(rs.FailedIndexes))
		for i := range replicas(job.Spec.TFReplicaSpecs[rt]) {
			if done.Has(i) {
				continue
			}
			pod := o.pods[ReplicaKey{rt, i}]
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
	msg := fmt.Sprintf("%s %d (pod %s) failed with exit code %d", strings.ToLower(string(rt)), f.Index, f.Pod, f.ExitCode)
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
