//go:build tools

// Package tools pins Prometheus, built into bin/ by the Makefile.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
