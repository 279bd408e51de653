//go:build tools

// Package tools pins krew, the kubectl plugin manager the install test installs the
// release's plugin with, as docs/install.md tells a user to.
package tools

import _ "sigs.k8s.io/krew/cmd/krew"
