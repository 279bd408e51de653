// Command kubectl is upstream kubectl, built from its Go module as upstream's own
// main builds it: the docs' commands (kubectl create namespace, kubectl krew install)
// run with bin/kubectl, and the install test runs them as written.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
