//go:build !sdk

package cli

import "github.com/spf13/cobra"

// interactiveCommands are the commands for a person at a terminal: TensorBoard,
// notebooks, local mode and the dashboard. The build tag sdk leaves them out of the
// binary the Python SDK carries, which never calls them: they link a Kubernetes node,
// a web server and port forwarding, and would double its size.
func interactiveCommands(o *rootOptions) []*cobra.Command {
	return []*cobra.Command{
		newTensorBoardCommand(o),
		newNotebookCommand(o),
		newLocalCommand(o),
		newDashboardCommand(o),
	}
}
