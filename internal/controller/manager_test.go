package controller

import (
	"testing"

	"k8s.io/utils/ptr"
)

// TestControllerUsesClientGoQueue checks that the TFJob controller's work queue is
// client-go's: controller-runtime v0.24's priority queue can deadlock as it shuts down
// (a worker never returns, and the controller never stops). Moving to a
// controller-runtime that fixes it is when this may change.
func TestControllerUsesClientGoQueue(t *testing.T) {
	opts := controllerOptions(ManagerOptions{MaxConcurrentReconciles: 16})
	if opts.UsePriorityQueue == nil || *opts.UsePriorityQueue {
		t.Errorf("UsePriorityQueue is %v, want false", ptr.Deref(opts.UsePriorityQueue, true))
	}
	if opts.MaxConcurrentReconciles != 16 {
		t.Errorf("MaxConcurrentReconciles is %d, want 16", opts.MaxConcurrentReconciles)
	}
}
