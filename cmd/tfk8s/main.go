// Command tfk8s is the command line of tfk8s: it submits TensorFlow training jobs to
// Kubernetes, shipping code and data through S3, and follows them. See
// internal/cli for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tfk8s/tfk8s/internal/cli"
)

func main() {
	// The controller-runtime client logs nothing a user needs; unset, it complains.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.DefaultEnv())
	stop()
	os.Exit(code)
}
