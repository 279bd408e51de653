//go:build !sdk

package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tfk8s/tfk8s/internal/notebook"
)

func newNotebookListCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the namespace's notebooks: running, starting, or stopped with their home kept",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			states, err := notebook.List(cmd.Context(), cs.Client, cs.Namespace)
			if err != nil {
				return err
			}
			return printNotebooks(o.env.Out, cs.Namespace, states, time.Now())
		},
	}
}

// printNotebooks prints the table of tfk8s notebook list; URL is where the notebook
// answers inside the cluster, tfk8s notebook open forwards to it.
func printNotebooks(w io.Writer, namespace string, states []notebook.State, now time.Time) error {
	if len(states) == 0 {
		_, err := fmt.Fprintf(w, "No notebooks in namespace %s: tfk8s notebook start -n %s starts one.\n", namespace, namespace)
		return err
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tAGE\tURL")
	for _, st := range states {
		url := notebook.URL(namespace, st.Name)
		if !st.Running {
			url = "<none>"
		}
		fmt.Fprintln(tw, strings.Join([]string{st.Name, st.State, age(st.Created, now), url}, "\t"))
	}
	return tw.Flush()
}

func newNotebookStopCommand(o *rootOptions) *cobra.Command {
	var deleteHome bool
	cmd := &cobra.Command{
		Use:   "stop [NAME]",
		Short: "Stop a notebook: delete all its objects but its home directory's claim (unless --delete-home)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cs, err := o.clients()
			if err != nil {
				return err
			}
			name := notebookName(args)
			deleted, readers, err := notebook.Stop(cmd.Context(), cs.Client, cs.Namespace, name, deleteHome, notebook.AdminKeys(o.storageConfig()))
			if err != nil {
				return err
			}
			if deleted == 0 {
				return fmt.Errorf("notebook %s/%s: %w", cs.Namespace, name, notebook.ErrNoNotebook)
			}
			kept := fmt.Sprintf("its home claim %s is kept: --delete-home deletes it", notebook.HomeClaim(name))
			if deleteHome {
				kept = "its home claim deleted"
			}
			if len(readers) > 0 {
				kept += fmt.Sprintf("; its S3 Secret %s is kept while the jobs submitted from it exist, whose pods read it (%s): stop the notebook again once they are deleted",
					notebook.S3Secret(name), strings.Join(readers, ", "))
			}
			fmt.Fprintf(o.env.Out, "notebook %s/%s stopped; %s\n", cs.Namespace, name, kept)
			return nil
		},
	}
	cmd.Flags().BoolVar(&deleteHome, "delete-home", false, "delete the home directory's claim too, and with it the files in it")
	return cmd
}
