package node

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// runProbes runs an instance's probes until ctx ends: the startup probe first, then the
// readiness and liveness probes. A failed startup or liveness probe kills the instance,
// which the restart policy may replace; readiness drives the container's Ready.
func (r *containerRunner) runProbes(ctx context.Context, inst *instance) {
	c := &r.spec
	if c.StartupProbe != nil {
		ok := r.probeLoop(ctx, inst, "Startup", c.StartupProbe, func(bool) bool { return true })
		if ctx.Err() != nil {
			return
		}
		if !ok {
			r.killInstance(inst, "Startup probe failed")
			return
		}
		r.setStarted(inst)
	}
	var wg sync.WaitGroup
	if c.ReadinessProbe != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.probeLoop(ctx, inst, "Readiness", c.ReadinessProbe, func(ready bool) bool {
				r.setReady(inst, ready)
				return false
			})
		}()
	}
	if c.LivenessProbe != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !r.probeLoop(ctx, inst, "Liveness", c.LivenessProbe, func(alive bool) bool { return !alive }) && ctx.Err() == nil {
				r.killInstance(inst, "Liveness probe failed")
			}
		}()
	}
	wg.Wait()
}

// probeLoop runs probe p every period after its initial delay. Each time the result
// crosses its threshold (successThreshold successes or failureThreshold failures in a
// row) it calls verdict, and stops when verdict returns true. It returns the last
// verdict.
func (r *containerRunner) probeLoop(ctx context.Context, inst *instance, kind string, p *corev1.Probe, verdict func(ok bool) bool) bool {
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	successes, failures := 0, 0
	successThreshold := max(int(p.SuccessThreshold), 1)
	failureThreshold := max(int(p.FailureThreshold), 1)
	state := false
	delay := time.Duration(p.InitialDelaySeconds) * time.Second
	for {
		select {
		case <-ctx.Done():
			return state
		case <-time.After(delay):
		}
		delay = period
		err := r.probe(ctx, inst, p, timeout)
		if ctx.Err() != nil {
			return state
		}
		if err == nil {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
			r.w.event(corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %v", kind, err)
		}
		switch {
		case successes >= successThreshold:
			state = true
		case failures >= failureThreshold:
			state = false
		default:
			continue
		}
		if verdict(state) {
			return state
		}
	}
}

// probe runs one check of p against the instance.
func (r *containerRunner) probe(ctx context.Context, inst *instance, p *corev1.Probe, timeout time.Duration) error {
	return r.check(ctx, inst, p.Exec, p.HTTPGet, p.TCPSocket, timeout)
}

// seconds converts a probe's seconds field, defaulting zero.
func seconds(s int32, def int) time.Duration {
	if s <= 0 {
		s = int32(def)
	}
	return time.Duration(s) * time.Second
}
