// Command tfk8s is the command line of tfk8s: it submits TensorFlow training jobs to
// Kubernetes, shipping code and data through S3, and follows them. See
// internal/cli for the commands.
package main

import (
	"os"

	"github.com/tfk8s/tfk8s/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:]))
}
