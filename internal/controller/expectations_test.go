package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestExpectations checks that a job waits until the cache shows the pods tfk8s created
// and deleted and its own last status write, and no longer than expectationTimeout.
func TestExpectations(t *testing.T) {
	const job, other types.UID = "job-uid", "other-uid"
	created := worker(0).Finalizer().Obj()
	live := worker(1).Phase(corev1.PodRunning).Finalizer().Obj()
	deleting := worker(1).Phase(corev1.PodRunning).Deleting().Finalizer().Obj()

	// check is one reconcile: the job's cached resourceVersion and pods, and whether
	// tfk8s may act on them.
	type check struct {
		rv   string
		pods []*corev1.Pod
		want bool
	}
	cases := []struct {
		name   string
		expect func(e *expectations)
		checks []check
	}{
		{
			name:   "nothing expected",
			expect: func(*expectations) {},
			checks: []check{{rv: "1", want: true}},
		},
		{
			name:   "a created pod not yet in the cache, then in it",
			expect: func(e *expectations) { e.expectCreated(job, created.Name) },
			checks: []check{{rv: "1", want: false}, {rv: "1", pods: []*corev1.Pod{created}, want: true}, {rv: "1", want: true}},
		},
		{
			name: "a creation that failed is not waited for",
			expect: func(e *expectations) {
				e.expectCreated(job, created.Name)
				e.creationFailed(job, created.Name)
			},
			checks: []check{{rv: "1", want: true}},
		},
		{
			name:   "a deleted pod still live in the cache, then being deleted",
			expect: func(e *expectations) { e.expectDeleted(job, live.UID) },
			checks: []check{{rv: "1", pods: []*corev1.Pod{live}, want: false}, {rv: "1", pods: []*corev1.Pod{deleting}, want: true}},
		},
		{
			name:   "a deleted pod gone from the cache",
			expect: func(e *expectations) { e.expectDeleted(job, live.UID) },
			checks: []check{{rv: "1", want: true}},
		},
		{
			name:   "the job's cached version is the one before the status write, then a newer one",
			expect: func(e *expectations) { e.expectStatusWritten(job, "41") },
			checks: []check{{rv: "41", want: false}, {rv: "42", want: true}, {rv: "41", want: true}},
		},
		{
			name: "a stale job blocks even when the pods are all there",
			expect: func(e *expectations) {
				e.expectCreated(job, created.Name)
				e.expectStatusWritten(job, "41")
			},
			checks: []check{{rv: "41", pods: []*corev1.Pod{created}, want: false}, {rv: "42", pods: []*corev1.Pod{created}, want: true}},
		},
		{
			name: "past the timeout, the cache is trusted again",
			expect: func(e *expectations) {
				e.expectCreated(job, created.Name)
				e.expectStatusWritten(job, "41")
				e.jobs[job].since = time.Now().Add(-expectationTimeout - time.Second)
			},
			checks: []check{{rv: "41", want: true}, {rv: "41", want: true}},
		},
		{
			name: "another job's expectations do not block this one",
			expect: func(e *expectations) {
				e.expectCreated(other, "other-worker-0")
				e.expectStatusWritten(other, "41")
			},
			checks: []check{{rv: "41", want: true}},
		},
		{
			name: "forgotten once the job is gone",
			expect: func(e *expectations) {
				e.expectCreated(job, created.Name)
				e.forget(job)
			},
			checks: []check{{rv: "1", want: true}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newExpectations()
			tc.expect(e)
			for i, c := range tc.checks {
				if got := e.satisfied(job, c.rv, c.pods); got != c.want {
					t.Errorf("reconcile %d (resourceVersion %s, %d pods): satisfied = %v, want %v", i+1, c.rv, len(c.pods), got, c.want)
				}
			}
		})
	}
}
