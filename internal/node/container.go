package node

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// backoffResetAfter: a container that ran this long before failing restarts without
// delay growth, as the kubelet resets its back-off.
const backoffResetAfter = 10 * time.Minute

// containerRunner runs one container of a pod, instance after instance, and keeps its
// status. Its fields are guarded by the pod worker's mutex.
type containerRunner struct {
	w    *podWorker
	spec corev1.Container
	init bool

	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	ready    bool
	started  bool
	// instance is the running container, nil between instances.
	instance *instance
	// starting is set while an instance is being prepared and created.
	starting bool
	// created counts the instances created, by earlier runs of the node too; the
	// restart count is one less.
	created int32
	backoff time.Duration
	// imageID is the image the last instance ran, as the status reports it;
	// pullBackoff the delay before the next pull after a failed one.
	imageID     string
	pullBackoff time.Duration
}

// instance is one run of a container.
type instance struct {
	id  string
	cmd *exec.Cmd
	// exited is closed once runc has exited and the output is drained.
	exited chan struct{}
	// stopping is set when the node kills the instance (deletion, liveness, hook
	// failure), so its SIGKILL is not taken for an OOM kill.
	stopping bool
	// cancelProbes ends the instance's probes.
	cancelProbes context.CancelFunc
}

// exitInfo is how an instance ended.
type exitInfo struct {
	terminated corev1.ContainerStateTerminated
	// configError: the instance never started because its configuration refers to
	// something missing; it is retried whatever the restart policy.
	configError bool
}

// newContainerRunner prepares to run container c; created counts the instances an
// earlier run of the node created, so restart counts carry on.
func newContainerRunner(w *podWorker, c corev1.Container, init bool, waitingReason string, created int32) *containerRunner {
	return &containerRunner{
		w: w, spec: c, init: init, created: created,
		state:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waitingReason}},
		backoff: w.m.opts.RestartBackoff,
	}
}

// status is the runner's ContainerStatus; the caller holds the worker's mutex.
func (r *containerRunner) status() corev1.ContainerStatus {
	started := r.started
	s := corev1.ContainerStatus{
		Name:                 r.spec.Name,
		Image:                r.spec.Image,
		ImageID:              r.imageID,
		State:                *r.state.DeepCopy(),
		LastTerminationState: *r.last.DeepCopy(),
		RestartCount:         r.restarts,
		Ready:                r.ready,
		Started:              &started,
	}
	if s.Image == "" {
		s.Image = "host"
	}
	if r.instance != nil {
		s.ContainerID = "runc://" + r.instance.id
	} else if t := r.state.Terminated; t != nil {
		s.ContainerID = t.ContainerID
	}
	return s
}

// supervise runs instances of the container until one ends for good under the restart
// policy, or the pod stops. It returns the last exit, nil if none ran.
func (r *containerRunner) supervise(ctx context.Context) *exitInfo {
	var last *exitInfo
	for {
		if r.w.stopping() {
			return last
		}
		img := r.ensureImage(ctx)
		if img == nil {
			return last
		}
		startedAt := time.Now()
		exit := r.runInstance(ctx, img)
		last = &exit
		if r.w.stopping() || !r.restartable(exit) {
			return last
		}
		delay := r.nextBackoff(time.Since(startedAt))
		ref := r.w.podRef()
		r.w.mu.Lock()
		if !exit.configError {
			r.last = r.state
			r.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  ReasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, r.spec.Name, ref),
			}}
		}
		r.w.mu.Unlock()
		r.w.notify()
		r.w.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", r.spec.Name)
		select {
		case <-r.w.stopCh:
			return last
		case <-time.After(delay):
		}
	}
}

// restartable applies the restart policy to an exit. Init containers restart on
// failure unless the policy is Never; configuration errors are always retried.
func (r *containerRunner) restartable(exit exitInfo) bool {
	if exit.configError {
		return true
	}
	failed := exit.terminated.ExitCode != 0
	switch r.w.restartPolicy() {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return failed
	default:
		return failed || !r.init
	}
}

// nextBackoff returns the delay before the next instance and doubles the next one, up
// to the maximum; a long run resets it.
func (r *containerRunner) nextBackoff(ran time.Duration) time.Duration {
	initial := r.w.m.opts.RestartBackoff
	if ran >= backoffResetAfter {
		r.backoff = initial
	}
	d := r.backoff
	r.backoff = min(r.backoff*2, MaxRestartBackoff)
	return d
}

// setCreated records a created instance, which stays ContainerCreating until its
// postStart hook has run.
func (r *containerRunner) setCreated(inst *instance) {
	r.w.mu.Lock()
	r.instance = inst
	r.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
	r.w.mu.Unlock()
	r.w.notify()
}

// setRunning records that an instance runs, unless it already ended.
func (r *containerRunner) setRunning(inst *instance) {
	r.w.mu.Lock()
	if r.instance != inst {
		r.w.mu.Unlock()
		return
	}
	r.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	r.started = r.spec.StartupProbe == nil
	r.ready = r.spec.ReadinessProbe == nil && r.started && !r.init
	r.w.mu.Unlock()
	r.w.notify()
}

// setTerminated records how an instance ended.
func (r *containerRunner) setTerminated(t corev1.ContainerStateTerminated) {
	r.w.mu.Lock()
	if r.state.Running != nil && t.StartedAt.IsZero() {
		t.StartedAt = r.state.Running.StartedAt
	}
	if r.state.Running == nil && r.state.Terminated != nil {
		r.last = r.state
	}
	r.instance = nil
	r.state = corev1.ContainerState{Terminated: &t}
	r.ready, r.started = false, false
	r.w.mu.Unlock()
	r.w.notify()
}

// setWaiting records why the next instance cannot start yet.
func (r *containerRunner) setWaiting(reason, message string) {
	r.w.mu.Lock()
	r.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	r.w.mu.Unlock()
	r.w.notify()
}

// setReady records a readiness probe's verdict.
func (r *containerRunner) setReady(inst *instance, ready bool) {
	r.w.mu.Lock()
	changed := r.instance == inst && r.ready != ready
	if changed {
		r.ready = ready
	}
	r.w.mu.Unlock()
	if changed {
		r.w.notify()
	}
}

// setStarted records that the startup probe succeeded.
func (r *containerRunner) setStarted(inst *instance) {
	r.w.mu.Lock()
	if r.instance == inst {
		r.started = true
		r.ready = r.spec.ReadinessProbe == nil && !r.init
	}
	r.w.mu.Unlock()
	r.w.notify()
}

// current returns the running instance, if any.
func (r *containerRunner) current() *instance {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return r.instance
}

// logPath returns the log file of the current (or last) instance, or with previous the
// one before; "" if there is none.
func (r *containerRunner) logPath(previous bool) string {
	r.w.mu.Lock()
	n := r.created
	r.w.mu.Unlock()
	if previous {
		n--
	}
	if n <= 0 {
		return ""
	}
	return r.w.logPath(r.spec.Name, n-1)
}
