package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	tfv1 "github.com/tfk8s/tfk8s/api/v1alpha1"
	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

func newArtifactsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "artifacts",
		Short: "List or download what a job's replicas backed up to S3",
		Long: `List or download what a job's replicas backed up to S3: for each replica,
<replica>/artifacts/<path in the container>, the log and record of each attempt,
<replica>/attempts/<n>/logs/<container>.log and <replica>/attempts/<n>/attempt.json,
and <replica>/manifest.json, which lists every file with its SHA-256. They outlive the
job's pods and the job itself. get checks every file it downloads against the
manifest, and names each one missing or different (exit code 1).`,
	}
	cmd.AddCommand(newArtifactsListCommand(o), newArtifactsGetCommand(o))
	return cmd
}

// locateFiles finds the files of job args[0], under the path args[1] if given.
func (o *rootOptions) locateFiles(ctx context.Context, args []string) (*jobs.Files, error) {
	cs, err := o.clients()
	if err != nil {
		return nil, err
	}
	path := ""
	if len(args) == 2 {
		path = args[1]
	}
	return o.storage().Locate(ctx, cs, args[0], path)
}

func newArtifactsListCommand(o *rootOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "ls JOB [PATH]",
		Aliases: []string{"list"},
		Short:   "List a job's stored files, under PATH (e.g. worker-0/artifacts) if given",
		Example: "  tfk8s artifacts ls mnist\n  tfk8s artifacts ls mnist chief-0/artifacts/workspace/model -o json",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputTable, outputJSON); err != nil {
				return err
			}
			files, err := o.locateFiles(cmd.Context(), args)
			if err != nil {
				return err
			}
			objs, err := files.S3.List(cmd.Context(), files.At)
			if err != nil {
				return err
			}
			if len(objs) == 0 && (output != outputJSON || files.Job == nil) {
				return files.None()
			}
			list := make([]storedFile, 0, len(objs))
			for _, obj := range objs {
				list = append(list, storedFile{Path: strings.TrimPrefix(obj.URI.Key, files.Base.Key), Size: obj.Size, Modified: obj.ModTime.UTC()})
			}
			return printStoredFiles(o.env.Out, list, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json (a list of path, size and modified)")
	return cmd
}

// storedFile is a file of a job in S3, as artifacts ls -o json prints it.
type storedFile struct {
	// Path is relative to the job's files: <replica>/artifacts/...
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// printStoredFiles prints files as a table or a JSON list.
func printStoredFiles(w io.Writer, files []storedFile, output string) error {
	if output == outputJSON {
		return printObject(w, files, output)
	}
	tw := newTabWriter(w)
	fmt.Fprintln(tw, "PATH\tSIZE\tMODIFIED")
	for _, f := range files {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", f.Path, f.Size, f.Modified.Format("2006-01-02T15:04:05Z"))
	}
	return tw.Flush()
}

func newArtifactsGetCommand(o *rootOptions) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "get JOB [PATH] [-o DIR]",
		Short: "Download a job's stored files, or those under PATH, into DIR (default ./JOB)",
		Example: "  tfk8s artifacts get mnist -o ./mnist-run\n" +
			"  tfk8s artifacts get mnist chief-0/artifacts/workspace/model -o ./model",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := o.locateFiles(cmd.Context(), args)
			if err != nil {
				return err
			}
			if dir == "" {
				dir = args[0]
			}
			stats, err := files.S3.DownloadPrefix(cmd.Context(), files.At, dir)
			if errors.Is(err, storage.ErrNotFound) {
				return files.None()
			}
			if err != nil {
				return err
			}
			abs, _ := filepath.Abs(dir)
			fmt.Fprintf(o.env.Out, "%d files (%s) downloaded to %s, %d already there\n",
				stats.Transferred, storage.FormatBytes(stats.Bytes), abs, stats.Files-stats.Transferred)
			v, err := files.Verify(cmd.Context(), dir)
			if err != nil {
				return err
			}
			running := files.Job != nil && !jobs.ConditionTrue(files.Job, tfv1.JobSucceeded) && !jobs.ConditionTrue(files.Job, tfv1.JobFailed)
			return reportVerification(v, o.env.Out, o.env.ErrOut, running)
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "", "directory to download into (default ./JOB)")
	return cmd
}
