//go:build tools

// Package tools pins Kueue, the job queueing controller that tfk8s's Kueue tests run
// against the test control plane.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
