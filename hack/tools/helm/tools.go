//go:build tools

// Package tools pins helm, which lints and renders charts/tfk8s and installs it.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
