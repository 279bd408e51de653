//go:build !linux && !sdk

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLocalCommand returns `tfk8s local` where local mode cannot run: its network
// namespaces, cgroups and mounts are Linux's, so every use says so.
func newLocalCommand(*rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:                "local",
		Short:              "Run a one-machine Kubernetes cluster with tfk8s (needs root and Linux)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("tfk8s local runs on Linux only: its nodes are Linux network namespaces, cgroups and mounts")
		},
	}
}
