//go:build tools

// Package tools pins crd-ref-docs.
package tools

import _ "github.com/elastic/crd-ref-docs"
