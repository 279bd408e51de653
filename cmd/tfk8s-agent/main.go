// Command tfk8s-agent runs in a TFJob's containers: it fetches code and data from S3
// before the user's command starts, runs the command, and backs up its artifacts and
// logs to S3 while it runs and when it stops. See package internal/agent.
//
//	tfk8s-agent install DIR               copy this binary to DIR/tfk8s-agent
//	tfk8s-agent run [flags] -- CMD ARGS   run CMD under the agent
//	tfk8s-agent mirror --from s3://BUCKET/PREFIX/ --to DIR [--interval 5s] [--include GLOB]...
//	                                      keep DIR up to date with the prefix (TensorBoard's summaries)
//	tfk8s-agent record                    write a finished run's end.json (the environment says all)
package main

import (
	"fmt"
	"os"

	"github.com/tfk8s/tfk8s/internal/agent"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

const usage = `usage:
  tfk8s-agent install DIR
  tfk8s-agent run [flags] -- COMMAND [ARGS...]
  tfk8s-agent mirror --from s3://BUCKET/PREFIX/ --to DIR [--interval 5s] [--include GLOB]...
  tfk8s-agent record`

// run dispatches a subcommand and returns the exit code.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return agent.ExitUsage
	}
	switch args[0] {
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, usage)
			return agent.ExitUsage
		}
		if err := agent.Install(args[1]); err != nil {
			fmt.Fprintf(os.Stderr, "tfk8s-agent: %v\n", err)
			return agent.ExitInternal
		}
		return 0
	case "run":
		cfg, err := agent.ParseRunArgs(args[1:], os.Getenv)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tfk8s-agent: %v\n%s\n", err, usage)
			return agent.ExitUsage
		}
		return agent.Run(cfg, os.Stdout, os.Stderr)
	case "mirror":
		cfg, err := agent.ParseMirrorArgs(args[1:], os.Getenv)
		if err != nil {
			fmt.Fprintf(os.Stderr, "tfk8s-agent: %v\n%s\n", err, usage)
			return agent.ExitUsage
		}
		return agent.RunMirror(cfg, os.Stderr)
	case "record":
		cfg, err := agent.ParseEndRecordConfig(os.Getenv)
		if err != nil || len(args) != 1 {
			fmt.Fprintf(os.Stderr, "tfk8s-agent: %v\n%s\n", err, usage)
			return agent.ExitUsage
		}
		return agent.RunEndRecord(cfg, os.Stderr)
	default:
		fmt.Fprintf(os.Stderr, "tfk8s-agent: unknown subcommand %q\n%s\n", args[0], usage)
		return agent.ExitUsage
	}
}
