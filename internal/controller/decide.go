package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/controller/build"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// plan is what one reconcile decided before writing anything: the job's new status and
// what each act step writes. Every act step reads its part and no act step decides.
type plan struct {
	// o is the outcome of the job's pods; o.status is the job's new status.
	o *observation
	// run is the job as this reconcile runs it: a suspended copy while Kueue holds it.
	run *tfv1.TFJob
	// kueue is what the job's Workload needs written.
	kueue kueuePlan
	// suspend sets runPolicy.suspend: the job was not scheduled in time and asks to be
	// suspended rather than failed.
	suspend bool
	// remove are the pods to delete: those the clean-up policy names once the job has
	// finished, or every active pod of a suspended job.
	remove []*corev1.Pod
	// start is what running the job writes; nil when it is finished or suspended.
	start *startPlan
	// tensorBoard and record are what the job's TensorBoard and end record need,
	// decided from the status before any pod is written.
	tensorBoard tensorBoardPlan
	record      recordPlan
	// progress is the job's next progress poll.
	progress progressPlan
	// requeue is when to look again for a deadline or a timeout, or 0.
	requeue time.Duration
}

// startPlan is what a running job's act steps write: the pods of an earlier job to
// clear, the failed pods to replace, and the missing pods to create.
type startPlan struct {
	// gang is the group object to create before the pods, nil for none; gangRefused
	// fails the job instead, its gang scheduler not being served.
	gang        client.Object
	gangView    gangView
	gangRefused string
	foreign     []*corev1.Pod
	retries     []retry
	// retryIn is when the next failed pod's delay ends, or 0.
	retryIn time.Duration
	missing []ReplicaKey
	// opts builds the missing pods, host ports allocated; tfConfigs is the job's
	// TF_CONFIG, prepared once for all of them.
	opts      PodOptions
	tfConfigs *TFConfigs
	// err is why the missing pods cannot be built (no host port range large enough).
	err error
	// claims are the claims of the job's volumes to create before its pods;
	// invalidVolume fails the job instead, naming the volume that cannot be served.
	claims        []*corev1.PersistentVolumeClaim
	invalidVolume string
	// deviceClaims are the ResourceClaimTemplates to create before the pods;
	// deviceClaimWait holds the pods back while one a deleted job of the name left is
	// collected; invalidDeviceClaim fails the job instead, naming the field.
	deviceClaims       []newDeviceClaim
	deviceClaimWait    time.Duration
	invalidDeviceClaim string
	// services are what the job's Services need.
	services servicePlan
	// holdFor is how long the delay after the API server's last refusal of the job's
	// pods still runs: nothing is sent until it ends.
	holdFor time.Duration
	// firstBatch is the size of the first slow-start batch of the missing pods.
	firstBatch int
	// admission places the pods on the flavors Kueue admitted them to, as read; nil
	// outside Kueue.
	admission *workloadAdmission
	flavors   map[string]*resourceFlavorSpec
}

// retry is a failed pod whose replica is to be created again.
type retry struct {
	pod *corev1.Pod
	// failures is how many times in a row the replica has now failed; 0 for a disruption.
	failures int32
	// left is how long the pod's delay still runs; 0 when it is due.
	left time.Duration
}

// decide observes the job's pods and decides what this reconcile does, as a pure
// function of the job, its pods, its Workload as read, and the clock. Keeping it free of
// writes lets every policy be table-tested without an API server.
func (r *TFJobReconciler) decide(w *world) *plan {
	job, pods, now := w.job, w.pods, w.now
	p := &plan{kueue: decideKueue(job, pods, w.kueue), run: job}
	if p.kueue.holdReason != "" {
		// Held by Kueue: this reconcile's copy is suspended, and never written.
		p.run = job.DeepCopy()
		p.run.Spec.RunPolicy.Suspend = ptr.To(true)
	}
	run := p.run
	p.o = observePods(run, pods, now)
	st := p.o.status
	switch {
	case w.rival != "" && !jobFinished(st):
		finish(st, tfv1.JobFailed, tfv1.ReasonJobNameTaken, nameTakenMessage(w.rival), now)
	case p.kueue.devicesRefused != "" && !jobFinished(st):
		finish(st, tfv1.JobFailed, tfv1.ReasonInvalidDeviceClaim, p.kueue.devicesRefused, now)
	case p.kueue.unavailable != "" && !jobFinished(st):
		finish(st, tfv1.JobFailed, tfv1.ReasonKueueUnavailable, p.kueue.unavailable, now)
	case p.kueue.holdReason != "":
		holdJob(st, p.kueue.holdReason, p.kueue.holdMsg, now)
	}
	p.requeue = updateConditions(run, p.o, now)
	var wait time.Duration
	p.suspend, wait = enforceScheduleTimeout(run, pods, st, now)
	p.requeue = minPositive(p.requeue, wait)
	noteIgnoredFields(run, r.Gang.DefaultProvider, st, now)
	if !jobFinished(st) && !jobSuspended(run) && !p.suspend {
		p.start = r.planStart(run, p.o, w, now.Time)
		p.start.admission, p.start.flavors = p.kueue.admission, w.flavors
		if msg := tfConfigRefusal(run, p.start); msg != "" {
			finish(st, tfv1.JobFailed, tfv1.ReasonTFConfigTooLarge, msg, now)
			p.start = nil
		} else if msg := agentPodRefusal(run, p.start); msg != "" {
			finish(st, tfv1.JobFailed, tfv1.ReasonAgentPodRefused, msg, now)
			p.start = nil
		}
	}
	// After every refusal above: a job failed in this reconcile waits no more.
	p.o.waits = replicaWaits(p.o)
	noteWaits(st, p.o.waits, waitsStopped(st, jobSuspended(run) || p.suspend), now)
	switch {
	case jobFinished(st):
		p.remove = podsToClean(run, pods)
	case p.start == nil:
		p.remove = activePods(pods)
	}
	p.tensorBoard = decideTensorBoard(run, st, w.tensorBoard, r.PodOptions, now.Time)
	p.record = decideRecord(run, st, w.record, now.Time)
	p.progress = r.planProgress(run, pods, st, w.progress, now)
	return p
}

// nameTakenMessage says why a job whose name a TFJob of the other API, rival, took
// first does not run, and what to do.
func nameTakenMessage(rival string) string {
	return fmt.Sprintf("%s, created first in this namespace, has this job's name: the pods and Service of both would have the same names, "+
		"so this job does not run and leaves them alone; delete this job and submit it again under another name", rival)
}

// unreadWait is how long the pods of a job wait when observe did not read what
// creating them needs (startsPods found none to create): the next reconcile reads it.
const unreadWait = time.Second

// planStart decides what running the job writes: the pods of an earlier job to clear
// (their names are not free yet), the failed pods due for re-creation, and the missing
// pods with what builds them.
func (r *TFJobReconciler) planStart(job *tfv1.TFJob, o *observation, w *world, now time.Time) *startPlan {
	sp := &startPlan{foreign: w.foreign, gangView: w.gang}
	sp.gang, sp.gangRefused = decideGang(job, w.gang)
	sp.services = decideServices(job, w.services)
	sp.retries, sp.retryIn = planRetries(o.retry, r.RetryBackoff, now)
	sp.missing = missingReplicas(job, o, podNames(w.foreign))
	if len(sp.missing) == 0 {
		return sp
	}
	var unreadVolumes, unreadClaims bool
	sp.claims, sp.invalidVolume, unreadVolumes = decideClaims(job, w.volumes)
	sp.deviceClaims, sp.deviceClaimWait, sp.invalidDeviceClaim = decideDeviceClaims(job, w.devices)
	if sp.invalidVolume == "" {
		sp.invalidVolume, unreadClaims = decideNotebookClaims(job, w.notebook)
	}
	sp.holdFor = w.refusals.wait
	if sp.holdFor == 0 && (unreadVolumes || unreadClaims) {
		sp.holdFor = unreadWait // observe and decide disagreed: never create unchecked
	}
	sp.firstBatch = firstBatch(len(sp.missing), cap(r.createSlots), w.refusals.refusedLately)
	sp.opts = r.PodOptions
	sp.opts.Agent.ImageVolume = r.imageVolumes.imageVolumes()
	if job.Spec.Networking.Mode == tfv1.NetworkingModeHostNetwork {
		sp.opts.HostPorts, sp.err = build.AllocateHostPorts(job, r.HostPortRange)
	}
	sp.tfConfigs = sp.opts.NewTFConfigs(job)
	return sp
}

// tfConfigRefusal says why the job's missing pods cannot carry their TF_CONFIG, or "".
func tfConfigRefusal(job *tfv1.TFJob, sp *startPlan) string {
	if len(sp.missing) == 0 || sp.err != nil {
		return ""
	}
	return sp.tfConfigs.Refusal(tfjob.UsesStorage(job))
}

// planRetries sorts the failed pods into those whose retry delay is over and those
// still waiting, and returns when the next delay ends, or 0. A disruption is no failure
// of the program: it waits for nothing and starts no failure in a row.
func planRetries(pods []*corev1.Pod, backoff time.Duration, now time.Time) (retries []retry, next time.Duration) {
	for _, pod := range pods {
		if isDisruption(pod) {
			retries = append(retries, retry{pod: pod})
			continue
		}
		due, left := retryDue(pod, backoff, now)
		if !due {
			next = minPositive(next, left)
		}
		retries = append(retries, retry{pod: pod, failures: failuresInARow(pod), left: left})
	}
	return retries, next
}

// startOutcome is what the act steps of a running job learned from the API server that
// the job's status records.
type startOutcome struct {
	// failReason and failMessage fail the job: its gang scheduler is not served, a
	// volume cannot be, or its Service's name is taken.
	failReason, failMessage string
	// created are the replicas whose pods were created.
	created []ReplicaKey
	// refusal is the API server's message refusing the job's pods.
	refusal string
	// accepted: every missing pod got through, or none was missing.
	accepted bool
	// events say what the act steps did, emitted once the status is written.
	events []jobEvent
}

// recordStart records in the job's status what the act steps of a running job learned:
// the new pods as active, whether the API server refuses the job's pods, and a failure.
// Counting the new pods now keeps the status written right, so the cache catching up
// calls for no other write.
func recordStart(st *tfv1.TFJobStatus, out startOutcome, now metav1.Time) {
	for _, key := range out.created {
		st.ReplicaStatuses[key.Type].Active++
	}
	switch {
	case out.refusal != "":
		setCondition(st, tfv1.JobPodCreationRefused, metav1.ConditionTrue, tfv1.ReasonPodCreationFailed, out.refusal, now)
	case out.accepted:
		clearRefusal(st, len(out.created), now)
	}
	if out.failReason != "" {
		finish(st, tfv1.JobFailed, out.failReason, out.failMessage, now)
	}
}

// minPositive is the sooner of two requeue delays, 0 standing for none.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}
