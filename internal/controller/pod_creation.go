package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// Pods are created as the Kubernetes Job controller creates them (slowStartBatch): in
// batches of 1, 2, 4, … pods, a batch sent only once the one before got through whole,
// and a batch stops sending at its first failure. A job that a ResourceQuota of 10 pods
// holds back then costs the API server a dozen requests a try, not one per missing pod.
// Once a batch is as wide as the reconciler's fan-out (PodCreateConcurrency), the rest
// is one last batch with that many pods in flight: a larger batch would send no more
// before a refusal stops it, and each boundary idles the API server while the slowest
// pod of the batch is created.
//
// A job no wider than the fan-out goes in one batch, unless a pod of its namespace was
// refused lately: a refusal costs it no more requests than its last batch would, and
// each boundary is a round trip its slowest pod waits for (6 pods: 1, 2, 3, two of
// them). After a refusal its namespace starts slow again for createBackoffMax.

// A job whose pods the API server refused is tried again after a delay that doubles with
// each refusal in a row, as the Job controller's does (1s up to 1m).
const (
	createBackoffBase = time.Second
	createBackoffMax  = time.Minute
)

// createMissingPods creates the pods of the replicas the plan finds missing, in
// slow-start batches, and returns what the API server said of them and when to try
// again, or 0. A refusal (a quota, Pod Security admission) delays the next try, so that
// a job held back costs the API server a few requests a minute.
func (r *TFJobReconciler) createMissingPods(ctx context.Context, job *tfv1.TFJob, sp *startPlan) (startOutcome, time.Duration, error) {
	log.FromContext(ctx).V(2).Info("Creating pods", "count", len(sp.missing))
	// No event per creation: at a thousand replicas those writes would cost the API
	// server as much as the pods.
	created, errs := r.createPods(ctx, job, sp)
	if len(created) > 0 {
		now := r.clock.Now()
		r.lastCreation.LoadOrStore(job.UID, now)
		r.lastAnyCreation.Store(now.UnixNano())
	}
	out, wait, err := r.noteCreationOutcome(job, len(created), errs)
	out.created = created
	return out, wait, err
}

// createPods creates the pods of the missing replicas in slow-start batches, and returns
// the replicas whose pods it created and the errors of those it could not create.
func (r *TFJobReconciler) createPods(ctx context.Context, job *tfv1.TFJob, sp *startPlan) ([]ReplicaKey, []error) {
	missing := sp.missing
	var (
		mu      sync.Mutex
		errs    []error
		created []ReplicaKey
		failed  atomic.Bool
	)
	// Each pod is built by the goroutine that creates it and dropped once created: a
	// 1000-worker job's pods hold 47 MB of TF_CONFIG, and only the pods in flight are
	// kept in memory.
	create := func(key ReplicaKey, name string) {
		pod, err := build.Pod(job, key.Type, key.Index, sp.opts, sp.tfConfigs)
		if err != nil {
			err = fmt.Errorf("building pod %s: %w", name, err)
		} else if err = r.Create(ctx, withFailuresInARow(pod, r.retries.take(job.UID, key))); apierrors.IsAlreadyExists(err) {
			err = r.adoptTrainingOperatorPod(ctx, job, key, name, err)
		} else if err != nil {
			err = fmt.Errorf("creating pod %s: %w", name, err)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			created = append(created, key)
			recordPodCreated()
		case apierrors.IsAlreadyExists(err):
			// A pod the cache does not show yet holds the name: this job's, created
			// before tfk8s restarted, or an earlier job's. Its arrival in the cache
			// calls the next reconcile (either way its owner has the job's name),
			// which sees which; nothing is expected of it meanwhile.
			r.expectations.creationFailed(job.UID, name)
		default:
			r.expectations.creationFailed(job.UID, name)
			errs = append(errs, err)
			failed.Store(true)
		}
	}
	for _, batch := range slowStartBatches(len(missing), cap(r.createSlots), sp.firstBatch) {
		var wg sync.WaitGroup
		for _, key := range missing[batch.start:batch.end] {
			r.createSlots <- struct{}{}
			if failed.Load() {
				// A pod of this batch failed while this one waited for a slot: the
				// rest of the batch is not sent.
				<-r.createSlots
				break
			}
			name := tfjob.PodName(job.Name, key.Type, key.Index)
			r.expectations.expectCreated(job.UID, name)
			wg.Go(func() {
				defer func() { <-r.createSlots }()
				create(key, name)
			})
		}
		wg.Wait()
		if failed.Load() {
			break
		}
	}
	return created, errs
}

// span is a batch of pods to create: missing[start:end].
type span struct{ start, end int }

// firstBatch is the size of the first batch of n pods: all of them if they fit in
// width and their namespace was not refused lately, else 1.
func firstBatch(n, width int, refusedLately bool) int {
	if n <= width && !refusedLately {
		return n
	}
	return 1
}

// slowStartBatches splits n pods into batches of first, 2×first, 4×first, … pods, up to
// width, and a last batch of the rest.
func slowStartBatches(n, width, first int) []span {
	var out []span
	for start, size := 0, max(first, 1); start < n; start, size = start+size, 2*size {
		if size >= width {
			size = n - start
		}
		out = append(out, span{start, min(start+size, n)})
	}
	return out
}

// noteCreationOutcome sorts what the API server said to the job's pods: a refusal is
// returned for the PodCreationRefused condition and delays the next try; pods getting
// through end the delay. It returns when to try again, or 0, and the errors that are
// not refusals, for the work queue to retry.
func (r *TFJobReconciler) noteCreationOutcome(job *tfv1.TFJob, created int, errs []error) (startOutcome, time.Duration, error) {
	var refusal string
	var other []error
	for _, err := range errs {
		if msg := refusalMessage(err); msg != "" && refusal == "" {
			refusal = msg
		} else if msg == "" {
			other = append(other, err)
		}
	}
	if refusal != "" {
		wait := r.refusals.refused(job, r.clock.Now())
		ev := newJobEvent(corev1.EventTypeWarning, tfv1.ReasonPodCreationFailed,
			"%s (%d pod(s) created before it; trying again in %v)", refusal, created, wait)
		return startOutcome{refusal: refusal, events: []jobEvent{ev}}, wait, errors.Join(other...)
	}
	if len(other) > 0 {
		ev := newJobEvent(corev1.EventTypeWarning, tfv1.ReasonPodCreationFailed, "%d pod(s) not created: %v", len(other), other[0])
		return startOutcome{events: []jobEvent{ev}}, 0, errors.Join(other...)
	}
	r.refusals.forget(types.NamespacedName{Namespace: job.Namespace, Name: job.Name})
	return startOutcome{accepted: true}, 0, nil
}

// clearRefusal sets the PodCreationRefused condition False, if it was True, once the
// job's pods got through.
func clearRefusal(st *tfv1.TFJobStatus, created int, now metav1.Time) {
	if !isConditionTrue(st, tfv1.JobPodCreationRefused) {
		return
	}
	msg := "the API server accepts the job's pods again"
	if created > 0 {
		msg += fmt.Sprintf(": %d created", created)
	}
	setCondition(st, tfv1.JobPodCreationRefused, metav1.ConditionFalse, tfv1.ReasonPodsCreated, msg, now)
}

// refusalChanged reports whether the new status turns PodCreationRefused on or off: an
// outcome the user waits to read, whose write is not held back while pods are created.
func refusalChanged(before, after *tfv1.TFJobStatus) bool {
	return isConditionTrue(before, tfv1.JobPodCreationRefused) != isConditionTrue(after, tfv1.JobPodCreationRefused)
}

// refusalMessage is the API server's message when err refuses a pod for what the job
// or its namespace says (a ResourceQuota, Pod Security admission, a LimitRange, an
// invalid template): a 403 Forbidden, a 422 Invalid, or a quota exceeded. Trying again
// at once would not change it. Else "".
func refusalMessage(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return ""
	}
	msg := status.Status().Message
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || strings.Contains(msg, "exceeded quota") {
		return msg
	}
	return ""
}

// refusalView is what observe reads of the refusals of the job's pods: how long its
// pods must still wait after the last one, and whether a pod of its namespace was
// refused lately.
type refusalView struct {
	wait          time.Duration
	refusedLately bool
}

// readRefusals reads the job's refusal streak and its namespace's at now.
func (r *TFJobReconciler) readRefusals(job *tfv1.TFJob, now time.Time) refusalView {
	return refusalView{wait: r.refusals.wait(job, now), refusedLately: r.refusals.refusedLately(job.Namespace, now)}
}

// creationBackoff holds, per job, its refusals in a row and when its pods may be tried
// again, and per namespace when a pod of it was last refused. Held in memory only: a
// restarted controller tries each job once at once.
type creationBackoff struct {
	m          sync.Map // types.NamespacedName → refusalStreak
	namespaces sync.Map // namespace → time.Time of its last refusal
}

// refusedLately reports whether a pod of namespace ns was refused in the last
// createBackoffMax: a quota there may refuse the next job too.
func (b *creationBackoff) refusedLately(ns string, now time.Time) bool {
	v, ok := b.namespaces.Load(ns)
	if ok && now.Sub(v.(time.Time)) >= createBackoffMax {
		b.namespaces.CompareAndDelete(ns, v)
		return false
	}
	return ok
}

type refusalStreak struct {
	uid      types.UID
	refusals int32
	until    time.Time
}

// wait is how long the job's pods must still wait after a refusal, or 0.
func (b *creationBackoff) wait(job *tfv1.TFJob, now time.Time) time.Duration {
	v, ok := b.m.Load(types.NamespacedName{Namespace: job.Namespace, Name: job.Name})
	if !ok || v.(refusalStreak).uid != job.UID {
		return 0
	}
	return max(0, v.(refusalStreak).until.Sub(now))
}

// refused counts a refusal of the job's pods and returns the delay before the next try.
func (b *creationBackoff) refused(job *tfv1.TFJob, now time.Time) time.Duration {
	key := types.NamespacedName{Namespace: job.Namespace, Name: job.Name}
	s := refusalStreak{uid: job.UID}
	if v, ok := b.m.Load(key); ok && v.(refusalStreak).uid == job.UID {
		s = v.(refusalStreak)
	}
	s.refusals++
	delay := doublingDelay(createBackoffBase, createBackoffMax, s.refusals)
	s.until = now.Add(delay)
	b.m.Store(key, s)
	b.namespaces.Store(job.Namespace, now)
	return delay
}

// forget ends the job's streak of refusals: its pods got through, or it is gone.
func (b *creationBackoff) forget(job types.NamespacedName) {
	b.m.Delete(job)
}
