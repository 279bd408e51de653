// Package cli is the tfk8s command line: it submits TFJobs (shipping the user's code and
// data through S3), lists, describes, follows, waits for, suspends, resumes and deletes
// them, and fetches their logs and artifacts, with kubectl's conventions: -n,
// --context and --kubeconfig mean what they mean to kubectl, tables and -o yaml|json
// look like its output, and errors go to stderr with a non-zero exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfk8s/tfk8s/internal/pack"
	"github.com/tfk8s/tfk8s/internal/runs"
	"github.com/tfk8s/tfk8s/internal/storage"
)

// Env is what the CLI reads from its process besides its arguments: the standard
// streams, the environment variables (S3 settings) and the tfk8s config file. Tests
// give their own, so that commands run in-process without touching the real ones.
type Env struct {
	genericiooptions.IOStreams
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
	// ConfigFile is the tfk8s config file (~/.tfk8s/config); "" reads none.
	ConfigFile string
	// DigestCacheFile remembers the digests of code and data directories already
	// stored, so that re-submitting them reads nothing; "" keeps no cache.
	DigestCacheFile string
	// RunsCacheDir keeps the run records tfk8s runs read, which are written once, so
	// that the next listing reads only what changed; "" keeps no cache.
	RunsCacheDir string
	// Name is the name the program was run by. As kubectl-tfk8s, the kubectl plugin
	// (kubectl tfk8s ... runs it), its usage says "kubectl tfk8s".
	Name string
	// Trace, if set, times the steps of submit; the benchmarks set it.
	Trace Tracer
}

// PluginName is the tfk8s binary's name as a kubectl plugin: kubectl finds it on PATH
// and runs it for kubectl tfk8s.
const PluginName = "kubectl-tfk8s"

// DefaultEnv is the environment of the tfk8s binary: os.Stdin, os.Stdout, os.Stderr,
// os.Getenv and ~/.tfk8s/config.
func DefaultEnv() Env {
	return Env{
		IOStreams:       genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Getenv:          os.Getenv,
		ConfigFile:      configFile(),
		DigestCacheFile: pack.DefaultDigestCacheFile(),
		RunsCacheDir:    runs.DefaultCacheDir(),
		Name:            os.Args[0],
	}
}

// ExitError ends the command with Code, after printing Err (unless nil).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// rootOptions are the flags every command shares.
type rootOptions struct {
	env  Env
	kube *genericclioptions.ConfigFlags
	s3   s3Flags
	// checkS3Endpoint, if set, refuses an S3 endpoint before it is dialled: the
	// in-cluster dashboard's allow-list.
	checkS3Endpoint func(endpoint string) error
}

// NewRootCommand returns the tfk8s command with all its subcommands.
func NewRootCommand(env Env) *cobra.Command {
	cmd, _ := newRootCommand(env)
	return cmd
}

// newRootCommand returns the tfk8s command and the options its subcommands share.
func newRootCommand(env Env) (*cobra.Command, *rootOptions) {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.In == nil {
		env.In = eofReader{}
	}
	o := &rootOptions{env: env, kube: genericclioptions.NewConfigFlags(true).WithWarningPrinter(env.IOStreams)}
	cmd := &cobra.Command{
		Use:   "tfk8s",
		Short: "Run TensorFlow training jobs on Kubernetes",
		Long: `tfk8s runs TensorFlow training jobs (TFJobs) on Kubernetes: single-node or
distributed (chief, parameter servers, workers, evaluator), with the user's code and
data shipped through S3-compatible storage and checkpoints and logs backed up there.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if filepath.Base(env.Name) == PluginName {
		cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl tfk8s"}
	}
	cmd.SetIn(env.In)
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	o.kube.AddFlags(cmd.PersistentFlags())
	o.s3.addFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		newSubmitCommand(o),
		newRenderCommand(o),
		newListCommand(o),
		newGetCommand(o),
		newDescribeCommand(o),
		newLogsCommand(o),
		newDeleteCommand(o),
		newWaitCommand(o),
		newSuspendCommand(o, true),
		newSuspendCommand(o, false),
		newArtifactsCommand(o),
		newRunsCommand(o),
		newTopCommand(o),
		newVersionCommand(o),
	)
	cmd.AddCommand(interactiveCommands(o)...)
	return cmd, o
}

// configFile is $TFK8S_CONFIG, else ~/.tfk8s/config.
func configFile() string {
	if f := os.Getenv("TFK8S_CONFIG"); f != "" {
		return f
	}
	return storage.DefaultConfigFile()
}

// Main runs the tfk8s command with args (without the program name) and returns its
// exit code; errors are printed to env.ErrOut as "error: ...", or as a JSON line
// with TFK8S_ERRORS=json.
func Main(ctx context.Context, args []string, env Env) int {
	cmd, o := newRootCommand(env)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var exit *ExitError
	if errors.As(err, &exit) {
		code, err = exit.Code, exit.Err
	}
	switch {
	case err == nil:
	case o.env.Getenv(EnvErrors) == "json":
		printError(env.ErrOut, err, o.apiServer())
	default:
		fmt.Fprintf(env.ErrOut, "error: %v\n", err)
	}
	return code
}

// Run is a program's main: the tfk8s command with args, in the process's environment,
// until the command ends or SIGINT or SIGTERM; it returns the exit code.
func Run(args []string) int {
	// The controller-runtime client logs nothing a user needs; unset, it complains.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, args, DefaultEnv())
}

// eofReader is an empty standard input.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
