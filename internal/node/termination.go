package node

import (
	"context"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	// killWait bounds the wait for a container to die after SIGKILL before runc is told
	// to remove it by force.
	killWait = 10 * time.Second
	// stopPoll is how often a stopping container and the grace deadline are checked.
	stopPoll = 50 * time.Millisecond
)

// stopContainer stops the container's running instance for the pod's stop: its preStop
// hook, SIGTERM, and SIGKILL once the pod's grace deadline passes (the deadline can be
// brought forward while waiting, as a second deletion with a shorter grace does). An
// instance still being created is waited for.
func (r *containerRunner) stopContainer(ctx context.Context) {
	w := r.w
	for {
		w.mu.Lock()
		cur, starting := r.instance, r.starting
		w.mu.Unlock()
		if cur != nil || !starting || time.Now().After(w.deadline()) {
			break
		}
		time.Sleep(stopPoll)
	}
	inst := r.current()
	if inst == nil {
		return
	}
	r.markStopping(inst)
	w.event(corev1.EventTypeNormal, "Killing", "Stopping container %s", r.spec.Name)
	if h := r.spec.Lifecycle; h != nil && h.PreStop != nil {
		if left := time.Until(w.deadline()); left > 0 {
			if err := r.runHook(ctx, inst, h.PreStop, left); err != nil {
				w.event(corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed: %v", err)
			}
		}
	}
	r.terminate(ctx, inst, w.deadline)
}

// killInstance stops an instance the node gave up on (a failed probe or postStart
// hook) with the pod's termination grace period; the restart policy then applies.
func (r *containerRunner) killInstance(inst *instance, why string) {
	if r.current() != inst {
		return
	}
	r.markStopping(inst)
	r.w.event(corev1.EventTypeNormal, "Killing", "Container %s: %s, will be restarted", r.spec.Name, why)
	grace := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
	if g := r.w.currentPod().Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	deadline := time.Now().Add(grace)
	r.terminate(context.WithoutCancel(r.w.m.ctx), inst, func() time.Time { return deadline })
}

// terminate sends SIGTERM, waits until the instance exits or deadline() passes, then
// sends SIGKILL.
func (r *containerRunner) terminate(ctx context.Context, inst *instance, deadline func() time.Time) {
	w := r.w
	if err := w.m.runc.kill(ctx, inst.id, syscall.SIGTERM); err != nil {
		w.log.V(2).Info("Sending SIGTERM", "container", r.spec.Name, "error", err)
	}
	for time.Now().Before(deadline()) {
		select {
		case <-inst.exited:
			return
		case <-time.After(min(stopPoll, max(time.Until(deadline()), 0))):
		}
	}
	select {
	case <-inst.exited:
		return
	default:
	}
	if err := w.m.runc.kill(ctx, inst.id, syscall.SIGKILL); err != nil {
		w.log.V(2).Info("Sending SIGKILL", "container", r.spec.Name, "error", err)
	}
	select {
	case <-inst.exited:
	case <-time.After(killWait):
		w.log.Info("Container survived SIGKILL; removing it by force", "container", r.spec.Name)
		_ = w.m.runc.forceDelete(ctx, inst.id)
	}
}

// markStopping notes that the node itself is killing the instance.
func (r *containerRunner) markStopping(inst *instance) {
	r.w.mu.Lock()
	inst.stopping = true
	r.w.mu.Unlock()
}
