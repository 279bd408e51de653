package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// replicaWait is a container of a replica's pod that waits for what only the user can
// fix; reason is the job's reason for it (ReasonImageNotPulled...).
type replicaWait struct {
	key    ReplicaKey
	pod    *corev1.Pod
	wait   tfjob.Wait
	reason string
}

// userWaitReasons maps the kubelet's waiting reasons that only the user can end to the
// job's reason for them. ErrImagePull and ImagePullBackOff alternate while the kubelet
// backs off, so they share one reason: the replica is announced once, not at each turn.
// CrashLoopBackOff is left out: a failing program is counted as restarts already.
var userWaitReasons = map[string]string{
	"ErrImagePull":               tfv1.ReasonImageNotPulled,
	"ImagePullBackOff":           tfv1.ReasonImageNotPulled,
	"InvalidImageName":           tfv1.ReasonImageNotPulled,
	"ErrImageNeverPull":          tfv1.ReasonImageNotPulled,
	"ImageInspectError":          tfv1.ReasonImageNotPulled,
	"CreateContainerConfigError": tfv1.ReasonContainerConfigInvalid,
}

// replicaWaits lists the containers of the job's live pods that wait on the user, in
// the order of the replicas, each replica's first wait of each reason only.
func replicaWaits(o *observation) []replicaWait {
	var out []replicaWait
	for key, pod := range o.pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		first := len(out) // this pod's waits start here: one pass, however large the job
		for _, w := range tfjob.WaitsOnUser(pod) {
			reason, ok := userWaitReasons[w.Reason]
			if ok && !slices.ContainsFunc(out[first:], func(rw replicaWait) bool { return rw.reason == reason }) {
				out = append(out, replicaWait{key: key, pod: pod, wait: w, reason: reason})
			}
		}
	}
	slices.SortFunc(out, func(a, b replicaWait) int {
		return cmp.Or(cmp.Compare(slices.Index(tfv1.ReplicaTypes, a.key.Type), slices.Index(tfv1.ReplicaTypes, b.key.Type)),
			cmp.Compare(a.key.Index, b.key.Index), strings.Compare(a.reason, b.reason))
	})
	return out
}

// what says what the replica cannot do, the same at every turn of the kubelet's tries.
func (w replicaWait) what() string {
	if w.reason == tfv1.ReasonContainerConfigInvalid {
		return "cannot create container " + w.wait.Container
	}
	return "cannot pull image " + w.wait.Image
}

// String says the wait in a sentence for its event: the replica, what it cannot do, its
// pod and container, and the kubelet's reason and message.
func (w replicaWait) String() string {
	return fmt.Sprintf("%s %d %s (pod %s, container %s: %s)", tfjob.TaskType(w.key.Type), w.key.Index, w.what(),
		w.pod.Name, w.wait.Container, w.wait)
}

// waitIndexes is the field of rs that lists the replicas waiting for reason.
func waitIndexes(rs *tfv1.ReplicaStatus, reason string) *string {
	switch reason {
	case tfv1.ReasonImageNotPulled:
		return &rs.ImageNotPulledIndexes
	case tfv1.ReasonContainerConfigInvalid:
		return &rs.ContainerConfigInvalidIndexes
	}
	return nil
}

// Messages of a ReplicasWaiting condition set False while replicas still waited.
const (
	waitsEndedFinished  = "the job has finished: its replicas wait no more"
	waitsEndedSuspended = "the job is suspended: its pods are gone, and may wait again once it resumes"
)

// noteWaits records the waits in the job's status: the indexes of each replica type by
// reason, and the ReplicasWaiting condition, True summing them up, or False once none
// is left. A job that never waited gets no condition. A finished or suspended job
// (stopped, one of the waitsEnded messages) waits no more, whatever its pods showed.
func noteWaits(st *tfv1.TFJobStatus, waits []replicaWait, stopped string, now metav1.Time) {
	if stopped != "" {
		waits = nil
	}
	for _, rs := range st.ReplicaStatuses {
		if rs != nil {
			rs.ImageNotPulledIndexes, rs.ContainerConfigInvalidIndexes = "", ""
		}
	}
	for key, set := range waitSets(waits) {
		if rs := st.ReplicaStatuses[key.typ]; rs != nil {
			*waitIndexes(rs, key.reason) = formatIndexes(set)
		}
	}
	switch {
	case len(waits) > 0:
		setCondition(st, tfv1.JobReplicasWaiting, metav1.ConditionTrue, commonestReason(waits), waitsMessage(waits), now)
	case !isConditionTrue(st, tfv1.JobReplicasWaiting):
	case stopped != "":
		setCondition(st, tfv1.JobReplicasWaiting, metav1.ConditionFalse, tfv1.ReasonWaitsEnded, stopped, now)
	default:
		setCondition(st, tfv1.JobReplicasWaiting, metav1.ConditionFalse, tfv1.ReasonWaitsCleared,
			"no replica waits on the user any more", now)
	}
}

// waitsStopped is why a job's replicas wait no more although its pods may still show
// it, or "" while they may wait: a finished job, or one suspended.
func waitsStopped(st *tfv1.TFJobStatus, suspend bool) string {
	switch {
	case jobFinished(st):
		return waitsEndedFinished
	case suspend || isConditionTrue(st, tfv1.JobSuspended):
		return waitsEndedSuspended
	}
	return ""
}

// waitKey is one replica type's waits for one reason.
type waitKey struct {
	typ    tfv1.ReplicaType
	reason string
}

// waitSets gathers the waiting indexes by replica type and reason.
func waitSets(waits []replicaWait) map[waitKey]sets.Set[int32] {
	out := map[waitKey]sets.Set[int32]{}
	for _, w := range waits {
		k := waitKey{w.key.Type, w.reason}
		if out[k] == nil {
			out[k] = sets.New[int32]()
		}
		out[k].Insert(w.key.Index)
	}
	return out
}

// commonestReason is the reason most of the waits share (the first such in the
// replicas' order): the one `tfk8s list` shows beside the state.
func commonestReason(waits []replicaWait) string {
	counts := map[string]int{}
	best := ""
	for _, w := range waits {
		counts[w.reason]++
		if counts[w.reason] > counts[best] {
			best = w.reason
		}
	}
	return best
}
