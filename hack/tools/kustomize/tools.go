//go:build tools

// Package tools pins kustomize, which builds config/default.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
