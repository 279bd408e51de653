//go:build tools

// Package tools pins metrics-server, built into bin/ by the Makefile.
package tools

import _ "sigs.k8s.io/metrics-server/cmd/metrics-server"
