//go:build sdk

package cli

import "github.com/spf13/cobra"

// interactiveCommands are none in the Python SDK's binary: see root_full.go.
func interactiveCommands(*rootOptions) []*cobra.Command { return nil }
