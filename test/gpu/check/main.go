// Command check is make test-gpu's first step: it lists what this machine lacks to
// run the GPU test and exits 1 if anything, 0 if nothing.
//
//	go run ./test/gpu/check [REPO]
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tfk8s/tfk8s/test/gpu"
)

func main() {
	repo := "."
	if len(os.Args) > 1 {
		repo = os.Args[1]
	}
	missing := gpu.Missing(context.Background(), gpu.HostEnv(repo))
	if len(missing) == 0 {
		fmt.Println("test-gpu: this machine has what the GPU test needs")
		return
	}
	fmt.Fprintln(os.Stderr, "test-gpu: this machine lacks what the GPU test needs:")
	for _, m := range missing {
		fmt.Fprintf(os.Stderr, "  - %s\n", m)
	}
	os.Exit(1)
}
