//go:build tools

// Package tools pins the registry local mode serves images from.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
