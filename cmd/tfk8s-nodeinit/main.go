// Command tfk8s-nodeinit is the init of one node of a local cluster on the upstream
// Kubernetes node: containerd, the kubelet and kube-proxy in a network namespace and a
// private mount namespace of their own, joined to the host bridge. It needs root. See
// package internal/localnode.
//
//	tfk8s-nodeinit run CONFIG       run the node until SIGTERM or SIGINT, then remove it
//	tfk8s-nodeinit cleanup CONFIG   remove what a node that crashed left behind
//
// CONFIG is the node's node.json, a localnode.Config. The inner half runs as
// `tfk8s-nodeinit inner CONFIG`, started by run.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tfk8s/tfk8s/internal/localnode"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tfk8s-nodeinit:", err)
		os.Exit(1)
	}
}

// run does what the arguments ask.
func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: tfk8s-nodeinit run|cleanup CONFIG")
	}
	c, err := localnode.LoadConfig(args[1])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch args[0] {
	case "run":
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding tfk8s-nodeinit's executable: %w", err)
		}
		return localnode.Run(ctx, c, self)
	case localnode.InnerArg:
		return localnode.RunInner(ctx, c, os.NewFile(3, "release"))
	case "cleanup":
		return localnode.Cleanup(c)
	}
	return fmt.Errorf("unknown command %q: want run or cleanup", args[0])
}
