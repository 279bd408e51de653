package testutil

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// StartManager runs mgr (a tfk8s controller) in this process until stop is called;
// stop returns the error the manager ended with, naming it as the controller's.
func StartManager(mgr manager.Manager) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		return nil
	}
}

// RunManager runs mgr until t ends, and fails t if it ends with an error.
func RunManager(t testing.TB, mgr manager.Manager) {
	stop := StartManager(mgr)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
}
