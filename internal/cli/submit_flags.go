package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tfk8s/tfk8s/internal/jobs"
	"github.com/tfk8s/tfk8s/internal/jobspec"
	"github.com/tfk8s/tfk8s/internal/tfjob"
)

// submitFlags are submit's (and render's) flags as given: the job's parameters, and
// those of the command itself.
type submitFlags struct {
	p            jobspec.Params
	file         string
	fromRun      string
	wait, follow bool
	dryRun       bool
	yes          bool
	// rightSize, with fromRun, applies the run's right-sizing advice to its job.
	rightSize       bool
	output          string
	clusterEndpoint string
	storageSecret   string
}

func (f *submitFlags) addFlags(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	fs := cmd.Flags()
	jobspec.AddFlags(fs, &f.p)
	fs.StringVarP(&f.file, "filename", "f", "", "TFJob manifest (tfk8s.io/v1alpha1, or kubeflow.org/v1 converted) the flags apply over; - for stdin")
	fs.StringVar(&f.fromRun, "from-run", "", "submit the job a stored run was submitted as (JOB for its newest run, or JOB/RUN), the flags over it")
	fs.BoolVar(&f.yes, "yes", false, "with --from-run: submit the run's job even when run.json's spec differs from the job's in the cluster, or no job is left to compare with (by default it is only shown)")
	fs.BoolVar(&f.rightSize, "right-size", false, "with --from-run: set each replica type's CPU and memory as the run's right-sizing advice says (tfk8s runs show prints it); flags given still apply over it")
	fs.BoolVar(&f.wait, "wait", false, "wait until the job succeeds or fails (exit code 1 if it fails)")
	fs.BoolVar(&f.follow, "follow", false, "print the job's logs until it finishes, then wait as --wait")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the job instead of creating it: nothing is uploaded or created")
	fs.StringVarP(&f.output, "output", "o", "", "print the job as yaml or json (default with --dry-run: yaml)")
	fs.StringVar(&f.clusterEndpoint, "s3-cluster-endpoint", "", "S3 endpoint as pods reach it, when not at --s3-endpoint")
	fs.StringVar(&f.storageSecret, "storage-secret", "", "existing Secret of the job's namespace that its pods read the S3 settings from (keys "+
		tfjob.SecretKeyEndpoint+", "+tfjob.SecretKeyAccessKeyID+", "+tfjob.SecretKeySecretAccessKey+", optionally "+tfjob.SecretKeyRegion+" and "+tfjob.SecretKeyInsecure+
		"), instead of a Secret submit makes for the job from the local S3 settings (default $"+jobs.EnvStorageSecret+", which a notebook sets to its own)")
}

// submitArgs are the positional arguments: DIR before "--", the command after.
type submitArgs struct {
	dir     string
	command []string
}

// parseArgs splits the arguments at "--".
func parseArgs(cmd *cobra.Command, args []string) (submitArgs, error) {
	positional, command := args, []string(nil)
	if dash := cmd.ArgsLenAtDash(); dash >= 0 {
		positional, command = args[:dash], args[dash:]
	}
	switch len(positional) {
	case 0:
		return submitArgs{command: command}, nil
	case 1:
		return submitArgs{dir: positional[0], command: command}, nil
	}
	return submitArgs{}, fmt.Errorf("want at most one DIR, got %q: put the command after --, as in: tfk8s submit DIR --name N --image I -- python3 train.py", positional)
}

// checkDir checks that dir is a readable directory, naming the flag or argument it
// came from.
func checkDir(what, dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: not a directory", what, dir)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	defer f.Close()
	if _, err := f.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	return nil
}

// params checks the job's parameters of the flags, with the command; flags not given
// stay unset, so that a manifest's values stand.
func (f *submitFlags) params(command []string) (jobspec.Values, error) {
	if f.rightSize && f.fromRun == "" {
		return jobspec.Values{}, fmt.Errorf("--right-size: it applies a stored run's advice, so it needs --from-run JOB[/RUN]")
	}
	p := f.p
	p.Command = command
	return p.Check(f.file != "" || f.fromRun != "")
}
