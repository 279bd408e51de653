// Command tfk8s-dashboard is the tfk8s web dashboard as it runs in a cluster (the
// chart's dashboard Deployment): `tfk8s dashboard --in-cluster`, where each user signs
// in with a bearer token and every request to the API server is made with it. Its own
// ServiceAccount only reviews tokens. Flags are those of `tfk8s dashboard`.
package main

import (
	"os"

	"github.com/tfk8s/tfk8s/internal/cli"
)

func main() {
	os.Exit(cli.Run(append([]string{"dashboard", "--in-cluster"}, os.Args[1:]...)))
}
