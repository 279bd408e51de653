//go:build tools

// Package tools pins Kubeflow's training-operator v1.9.4. test/e2e's migration test runs
// it, built from this module, on a local cluster before tfk8s takes its jobs over, and
// test/integration/api compares tfk8s's kubeflow.org/v1 CRD with the one it publishes.
package tools

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
