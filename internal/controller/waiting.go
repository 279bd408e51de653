package controller

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// replicaWait is a container of a replica's pod that waits for what only the user can
// fix; reason is the job's reason for it (ReasonImageNotPulled...).
type replicaWait struct {
	key    ReplicaKey
	pod    string
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

// waitPhrases say what a replica cannot do, by the job's reason.
var waitPhrases = map[string]string{
	tfv1.ReasonImageNotPulled:         "cannot pull its image",
	tfv1.ReasonContainerConfigInvalid: "cannot create its container",
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
				out = append(out, replicaWait{key: key, pod: pod.Name, wait: w, reason: reason})
			}
		}
	}
	slices.SortFunc(out, func(a, b replicaWait) int {
		return cmp.Or(cmp.Compare(slices.Index(tfv1.ReplicaTypes, a.key.Type), slices.Index(tfv1.ReplicaTypes, b.key.Type)),
			cmp.Compare(a.key.Index, b.key.Index), strings.Compare(a.reason, b.reason))
	})
	return out
}

// tag is what the wait's part of the condition's message starts with: the replica and
// what it cannot do, the same however the kubelet's message reads.
func (w replicaWait) tag() string {
	return fmt.Sprintf("%s %d %s", tfjob.TaskType(w.key.Type), w.key.Index, waitPhrases[w.reason])
}

// String says the wait in a sentence: the replica, what it cannot do, its pod and
// container, and the kubelet's reason and message.
func (w replicaWait) String() string {
	return fmt.Sprintf("%s (pod %s, container %s: %s)", w.tag(), w.pod, w.wait.Container, w.wait)
}

// brief is the wait without the kubelet's message, which the first wait of the
// condition carries for all: the replicas of a job most often wait for the same image,
// and every replica is named within the message's 512 bytes.
func (w replicaWait) brief() string {
	return fmt.Sprintf("%s (pod %s, container %s: %s)", w.tag(), w.pod, w.wait.Container, w.wait.Reason)
}

// waitDetailLength bounds the kubelet's message in the condition.
const waitDetailLength = 240

// noteWaits sets the job's ReplicasWaiting condition: True naming each wait, with the
// first one's reason, or False once none is left. A job that never waited gets no
// condition, and a finished job is left as it ended.
func noteWaits(st *tfv1.TFJobStatus, waits []replicaWait, now metav1.Time) {
	switch {
	case jobFinished(st):
	case len(waits) > 0:
		parts := make([]string, len(waits))
		for i, w := range waits {
			parts[i] = w.brief()
		}
		first := waits[0]
		if len(first.wait.Message) > waitDetailLength {
			first.wait.Message = first.wait.Message[:waitDetailLength-3] + "..."
		}
		parts[0] = first.String()
		setCondition(st, tfv1.JobReplicasWaiting, metav1.ConditionTrue, waits[0].reason, strings.Join(parts, "; "), now)
	case isConditionTrue(st, tfv1.JobReplicasWaiting):
		setCondition(st, tfv1.JobReplicasWaiting, metav1.ConditionFalse, tfv1.ReasonWaitsCleared,
			"no replica waits on the user any more", now)
	}
}

// unsaidWaits are the waits the written condition after names that the condition
// before did not: each replica is announced once per reason while it waits, however
// often the kubelet's message changes, and a wait cut from a long message is not
// announced at every reconcile.
func unsaidWaits(before, after *metav1.Condition, waits []replicaWait) []replicaWait {
	if after == nil || after.Status != metav1.ConditionTrue {
		return nil
	}
	said := func(c *metav1.Condition, w replicaWait) bool {
		if c == nil || c.Status != metav1.ConditionTrue {
			return false
		}
		return slices.ContainsFunc(strings.Split(c.Message, "; "), func(part string) bool { return strings.HasPrefix(part, w.tag()+" (") })
	}
	var out []replicaWait
	for _, w := range waits {
		if said(after, w) && !said(before, w) {
			out = append(out, w)
		}
	}
	return out
}

// announceWaits emits a Warning event for each replica the written status newly says
// waits on the user, and a Normal one when the waits cleared.
func (r *TFJobReconciler) announceWaits(job *tfv1.TFJob, before, after *tfv1.TFJobStatus, waits []replicaWait) {
	was, now := findCondition(before, tfv1.JobReplicasWaiting), findCondition(after, tfv1.JobReplicasWaiting)
	if now != nil && now.Status == metav1.ConditionFalse && was != nil && was.Status == metav1.ConditionTrue {
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonWaitsCleared, "%s", now.Message)
	}
	for _, w := range unsaidWaits(was, now, waits) {
		r.event(job, corev1.EventTypeWarning, w.reason, "%s", truncate(w.String()))
	}
}
