package controller

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// rangesShown bounds the indexes one replica type shows in a message: a scattered set
// of a thousand replicas would otherwise fill it.
const rangesShown = 60

// replicaRanges names a replica type's indexes compactly, "worker 0-999" or
// "worker 0,2,4,... (500 replicas)" past rangesShown bytes.
func replicaRanges(typ tfv1.ReplicaType, set sets.Set[int32]) string {
	s := formatIndexes(set)
	if len(s) > rangesShown {
		s = s[:strings.LastIndexByte(s[:rangesShown], ',')] + fmt.Sprintf(",... (%d replicas)", set.Len())
	}
	return tfjob.TaskType(typ) + " " + s
}

// waitGroup is the waits for one reason and one image (or container): one part of the
// condition's message.
type waitGroup struct {
	what  string
	types []tfv1.ReplicaType
	sets  map[tfv1.ReplicaType]sets.Set[int32]
	count int
}

// groupWaits gathers waits by what they cannot do, in the replicas' order.
func groupWaits(waits []replicaWait) []*waitGroup {
	var out []*waitGroup
	for _, w := range waits {
		i := slices.IndexFunc(out, func(g *waitGroup) bool { return g.what == w.what() })
		if i < 0 {
			out = append(out, &waitGroup{what: w.what(), sets: map[tfv1.ReplicaType]sets.Set[int32]{}})
			i = len(out) - 1
		}
		g := out[i]
		if g.sets[w.key.Type] == nil {
			g.types = append(g.types, w.key.Type)
			g.sets[w.key.Type] = sets.New[int32]()
		}
		g.sets[w.key.Type].Insert(w.key.Index)
		g.count++
	}
	return out
}

// waitsMessage is the ReplicasWaiting condition's message: every waiting replica, by
// what it cannot do ("worker 0-999 and ps 0 cannot pull image x:1"). It holds only
// what stays the same while the kubelet retries, so that the status is not rewritten
// at each ErrImagePull and ImagePullBackOff; the events carry the kubelet's message.
// Parts that would pass maxMessageLength are counted instead, and not formatted.
func waitsMessage(waits []replicaWait) string {
	var b strings.Builder
	left := 0
	for _, g := range groupWaits(waits) {
		if left > 0 {
			left += g.count
			continue
		}
		names := make([]string, len(g.types))
		for i, typ := range g.types {
			names[i] = replicaRanges(typ, g.sets[typ])
		}
		part := strings.Join(names, " and ") + " " + g.what
		if b.Len() > 0 && b.Len()+len(part)+len("; ; and 1000000 more replicas wait") > maxMessageLength {
			left += g.count
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(part)
	}
	if left > 0 {
		fmt.Fprintf(&b, "; and %d more replicas wait", left)
	}
	return b.String()
}

// waitEventsPerType bounds the per-replica events of one replica type and reason: a
// user reading `kubectl describe` needs the kubelet's message of a few replicas to see
// the cause, and one line for the rest, not a thousand lines that push every other
// event out of sight (the status lists them all).
const waitEventsPerType = 3

// waitEvent is a Warning event about one waiting replica, related to its pod so that
// the events of two replicas are not folded into one series.
type waitEvent struct {
	pod             *corev1.Pod
	reason, message string
}

// newWaits are the waits the status after lists that the status before did not: each
// replica is announced once per reason while it waits, however the kubelet's message
// changes, and again only if it stopped waiting in between.
func newWaits(before, after *tfv1.TFJobStatus, waits []replicaWait) []replicaWait {
	listed := func(st *tfv1.TFJobStatus, cache map[waitKey]sets.Set[int32], w replicaWait) bool {
		k := waitKey{w.key.Type, w.reason}
		if _, ok := cache[k]; !ok {
			cache[k] = sets.New[int32]()
			if rs := st.ReplicaStatuses[k.typ]; rs != nil {
				cache[k] = parseIndexes(*waitIndexes(rs, k.reason))
			}
		}
		return cache[k].Has(w.key.Index)
	}
	was, is := map[waitKey]sets.Set[int32]{}, map[waitKey]sets.Set[int32]{}
	var out []replicaWait
	for _, w := range waits {
		if listed(after, is, w) && !listed(before, was, w) {
			out = append(out, w)
		}
	}
	return out
}

// waitEvents are the events that announce the new waits: one per replica for the
// first waitEventsPerType of each replica type and reason, then one naming the rest.
// The replicas the status before listed count toward that bound, as they were
// announced then: however the kubelet's reports of a large job trickle in over many
// reconciles, a replica type gets at most waitEventsPerType+1 events per reason while
// its replicas wait.
func waitEvents(before *tfv1.TFJobStatus, fresh []replicaWait) []waitEvent {
	all, shown := waitSets(fresh), map[waitKey]sets.Set[int32]{}
	announced := map[waitKey]int{}
	for k := range all {
		if rs := before.ReplicaStatuses[k.typ]; rs != nil {
			announced[k] = parseIndexes(*waitIndexes(rs, k.reason)).Len()
		}
	}
	var out []waitEvent
	for _, w := range fresh {
		k := waitKey{w.key.Type, w.reason}
		if shown[k] == nil {
			shown[k] = sets.New[int32]()
		}
		switch n := announced[k] + shown[k].Len(); {
		case n < waitEventsPerType:
			out = append(out, waitEvent{w.pod, w.reason, w.String()})
		case n == waitEventsPerType:
			rest := all[k].Difference(shown[k])
			out = append(out, waitEvent{w.pod, w.reason, fmt.Sprintf(
				"%d more: %s wait for the same reason (replicaStatuses lists every one)",
				rest.Len(), replicaRanges(k.typ, rest))})
		default:
			continue
		}
		shown[k].Insert(w.key.Index)
	}
	return out
}

// announceWaits emits the Warning events of the replicas the written status newly lists
// as waiting on the user, and a Normal one when the waits cleared: not when the job
// finished or was suspended, since the user fixed nothing.
func (r *TFJobReconciler) announceWaits(job *tfv1.TFJob, before, after *tfv1.TFJobStatus, waits []replicaWait) {
	was, now := findCondition(before, tfv1.JobReplicasWaiting), findCondition(after, tfv1.JobReplicasWaiting)
	if now != nil && now.Status == metav1.ConditionFalse && now.Reason == tfv1.ReasonWaitsCleared &&
		was != nil && was.Status == metav1.ConditionTrue {
		r.event(job, corev1.EventTypeNormal, tfv1.ReasonWaitsCleared, "%s", now.Message)
	}
	for _, e := range waitEvents(before, newWaits(before, after, waits)) {
		if r.Recorder != nil {
			r.Recorder.Eventf(job, e.pod, corev1.EventTypeWarning, e.reason, e.reason, "%s", truncate(e.message))
		}
	}
}
