//go:build tools

// Package tools pins versitygw.
package tools

import _ "github.com/versity/versitygw/cmd/versitygw"
